package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/plan"
)

// BenchmarkSubmitPlanAtLimits measures SubmitPlan of a plan at every
// default limit of pkg/plan at once (planAtLimits), one task per
// submission, over Connect against a real server in this process: the
// time to record it and the CPU time this process (server and client)
// spent on it, cpu-ms/op — what docs/plans.md states. Its steps call an
// irreversible tool, so that policy holds the plan for an approval and
// nothing of it runs; governance's judgement is waited for outside the
// measure. many: MaxExprs expressions sharing MaxExprTotalBytes; long:
// as few as fill it at MaxExprBytes each. Run:
//
//	go test -run '^$' -bench SubmitPlanAtLimits -benchtime 10x ./e2e/
func BenchmarkSubmitPlanAtLimits(b *testing.B) {
	h := startSteward(b, setup{inProcess: true, open: true})
	ctx := context.Background()
	tools := stewardv1connect.NewToolServiceClient(http.DefaultClient, h.url)
	if _, err := tools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: &stewardv1.ToolContract{
		Name: "noop", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC,
		Endpoint:        &stewardv1.ToolContract_Builtin{Builtin: &stewardv1.BuiltinEndpoint{Kind: "noop"}},
	}})); err != nil {
		b.Fatal(err)
	}
	// A long timeout: the figure is the result, and a shared machine is slow.
	tasks := stewardv1connect.NewTaskServiceClient(&http.Client{Timeout: 5 * time.Minute}, h.url)
	c := newClients(h.url)
	l := plan.DefaultLimits
	for _, shape := range []struct {
		name  string
		exprs int
	}{{"many", l.MaxExprs}, {"long", l.MaxExprTotalBytes / l.MaxExprBytes}} {
		b.Run(shape.name, func(b *testing.B) { submitPlans(b, c, tasks, planAtLimits(b, shape.exprs)) })
	}
}

// submitPlans submits pl to b.N new tasks, one at a time, and reports
// the CPU time of the submissions alone.
func submitPlans(b *testing.B, c clients, tasks stewardv1connect.TaskServiceClient, pl *stewardv1.Plan) {
	ctx := context.Background()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		k := contract()
		k.AllowedTools = []string{"noop"}
		resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: fmt.Sprintf("cost-%d-%d", time.Now().UnixNano(), i), Contract: k}))
		if err != nil {
			b.Fatal(err)
		}
		id := resp.Msg.Task.Contract.TaskId
		waitServed(b, c, id, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
			return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.Credential != nil, "not running with its credential"
		})
		b.StartTimer()
		before := cpuTime(b)
		if _, err := tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: id, Plan: pl})); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - before
		b.StopTimer()
		waitServed(b, c, id, time.Minute, func(tk *stewardv1.Task) (bool, string) {
			g := tk.Plan.GetGovernance()
			return g == stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL, "plan " + g.String()
		})
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/op")
}

// planAtLimits is a plan at every default limit at once: MaxSteps steps
// in MaxDepth layers, each depending on every step of the layer before
// (so a late step's expressions see nearly every step), exprs
// expressions sharing MaxExprTotalBytes, each at most MaxExprBytes and
// of the shape that costs CEL's parser most per byte (a list of small
// literals: a node every two bytes), spread over the steps, and literal
// parameters filling most of what is left of a request.
func planAtLimits(tb testing.TB, exprs int) *stewardv1.Plan {
	l := plan.DefaultLimits
	perExpr := min(l.MaxExprBytes, l.MaxExprTotalBytes/exprs)
	list := "[" + strings.Repeat("1,", (perExpr-len("size([1]) >= 0"))/2) + "1]"
	filler, err := structpb.NewStruct(map[string]any{"text": strings.Repeat("x", 5<<10)})
	if err != nil {
		tb.Fatal(err)
	}
	p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE}
	layer := func(i int) int { return i * l.MaxDepth / l.MaxSteps }
	for i := range l.MaxSteps {
		a := &stewardv1.ActionStep{Tool: "noop", Target: "t", Params: filler, ParamExprs: map[string]string{}}
		for k := i; k < exprs; k += l.MaxSteps {
			a.ParamExprs[fmt.Sprintf("p%d", k)] = "size(" + list + ")"
		}
		s := &stewardv1.Step{Id: fmt.Sprintf("s%d", i), Kind: &stewardv1.Step_Action{Action: a}}
		for j := range i {
			if layer(j) == layer(i)-1 {
				s.DependsOn = append(s.DependsOn, fmt.Sprintf("s%d", j))
			}
		}
		p.Steps = append(p.Steps, s)
	}
	return p
}
