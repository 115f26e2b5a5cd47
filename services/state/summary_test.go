package state_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// heavyAction is a proposed, approved and succeeded action whose request,
// rationale, approval parameters and inline result weigh size bytes each.
func heavyAction(id string, size int) []event.Payload {
	h := act(id, "search", "web", "r1")
	fill := strings.Repeat("x", size)
	a := h[0].(*stewardv1.ActionProposed).Action
	a.Request = []byte(fill)
	a.RequestHash = hexSHA256(a.Request)
	h[2].(*stewardv1.ActionPermitted).Permit.RequestHash = a.RequestHash
	a.Rationale = &stewardv1.ActionRationale{ExpectedImpact: fill}
	out := succeededOutcome(id, 1)
	out.Outcome.Result, out.Outcome.ResultRef = []byte(`"`+fill+`"`), ""
	out.Outcome.ResultHash = hexSHA256(out.Outcome.Result)
	return append(h, out)
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestListTasksShowsSummaries: ListTasks shows each task without what
// makes it heavy — the plan's steps, the actions' requests, rationales and
// results — and GetTask shows it whole.
func TestListTasksShowsSummaries(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	params, _ := structpb.NewStruct(map[string]any{"q": strings.Repeat("p", 10_000)})
	plan := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		{Id: "a", Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: "a", Params: params}}},
	}}
	h := append(running(), &stewardv1.PlanSubmitted{Plan: plan, PlanHash: "h1"})
	env.Append("t1", append(h, heavyAction("a1", 10_000)...)...)
	client, _ := serveState(t, env)

	list, err := client.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Msg.Tasks) != 1 {
		t.Fatalf("listed %d tasks, want 1", len(list.Msg.Tasks))
	}
	s := list.Msg.Tasks[0]
	a := s.Actions[0]
	if s.Plan.GetPlan() != nil || len(a.Request) > 0 || a.Rationale != nil || len(a.Outcome.GetResult()) > 0 {
		t.Errorf("ListTasks shows the plan's steps %v, a request of %d bytes, rationale %v, a result of %d bytes; want a summary without them",
			s.Plan.GetPlan() != nil, len(a.Request), a.Rationale != nil, len(a.Outcome.GetResult()))
	}
	if s.Plan.GetPlanHash() != "h1" || len(s.Plan.GetSteps()) != 1 || a.ActionId != "a1" || a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED ||
		a.Outcome.GetResultHash() == "" || a.RequestHash == "" {
		t.Errorf("the summary lost what it should keep: %v", s)
	}
	if size := proto.Size(s); size > 4_000 {
		t.Errorf("the summary weighs %d bytes; the task's heavy parts are 40,000", size)
	}

	whole, err := client.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	if w := whole.Msg.Task; w.Plan.GetPlan() == nil || len(w.Actions[0].Request) == 0 || w.Actions[0].Rationale == nil {
		t.Errorf("GetTask shows no plan steps or no request: %v", w)
	}
}

// TestListTasksEndsAPageAtItsByteBound: a page of tasks whose summaries
// together pass rpc.MaxPageBytes ends before the one that would pass
// it, with a token to continue; paging goes through every task once.
func TestListTasksEndsAPageAtItsByteBound(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	const tasks = 12
	for i := range tasks {
		k := contract(i)
		// The fold takes what CreateTask would refuse: a contract this
		// heavy stands for one of many full criteria and context refs.
		k.DesiredOutcome = strings.Repeat("d", 400<<10)
		env.Append(fmt.Sprint("t", i), &stewardv1.TaskCreated{Contract: k})
	}
	client, _ := serveState(t, env)

	var seen []string
	token, pages := "", 0
	for {
		resp, err := client.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{PageSize: state.MaxPageSize, PageToken: token}))
		if err != nil {
			t.Fatal(err)
		}
		if size := proto.Size(resp.Msg); size > rpc.MaxPageBytes {
			t.Fatalf("a page of %d tasks weighs %d bytes, past the %d of a page", len(resp.Msg.Tasks), size, rpc.MaxPageBytes)
		}
		for _, tk := range resp.Msg.Tasks {
			seen = append(seen, tk.Contract.Intent)
		}
		pages++
		if token = resp.Msg.NextPageToken; token == "" {
			break
		}
	}
	if len(seen) != tasks || seen[0] != "task 0" || seen[tasks-1] != fmt.Sprint("task ", tasks-1) {
		t.Fatalf("paged through %d tasks (%v…); want all %d in order", len(seen), seen[:min(3, len(seen))], tasks)
	}
	if pages < 3 {
		t.Errorf("%d pages for %d tasks of 400 KiB; want the byte bound to end them early", pages, tasks)
	}
}

// TestGetTaskRefusesATaskPastTheAnswerBound: GetTask of a task heavier
// than rpc.MaxResponseBytes is resource_exhausted naming the bound, and
// its actions are still read one by one.
func TestGetTaskRefusesATaskPastTheAnswerBound(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	h := running()
	for i := range 16 {
		h = append(h, heavyAction(fmt.Sprint("a", i), 200<<10)...)
	}
	env.Append("t1", h...)
	client, _ := serveState(t, env)

	_, err := client.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), fmt.Sprint(rpc.MaxResponseBytes)) {
		t.Fatalf("GetTask of a task of about 10 MiB: %v; want resource_exhausted naming the %d bytes of an answer", err, rpc.MaxResponseBytes)
	}
	if _, err := client.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: "t1", ActionId: "a15"})); err != nil {
		t.Fatalf("GetAction of the heavy task's action: %v", err)
	}
}

// TestReplayTaskLeavesOutATaskPastTheAnswerBound: ReplayTask of a task of
// about 10 MiB sends every event, leaving out the task folded so far once
// it would pass rpc.MaxResponseBytes, instead of failing the export.
func TestReplayTaskLeavesOutATaskPastTheAnswerBound(t *testing.T) {
	env := stewardtest.NewEnv(t)
	h := running()
	for i := range 16 {
		h = append(h, heavyAction(fmt.Sprint("a", i), 200<<10)...)
	}
	env.Append("t1", h...)
	// Uncompressed: Connect's send limit counts compressed bytes.
	audit := stewardv1connect.NewAuditServiceClient(http.DefaultClient, serveStateURL(t, env), connect.WithAcceptCompression("gzip", nil, nil))
	stream, err := audit.ReplayTask(context.Background(), connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	events, withTask := 0, 0
	for stream.Receive() {
		events++
		if stream.Msg().Task != nil {
			withTask++
		}
	}
	if err := stream.Err(); err != nil || events != len(h) || withTask == events || withTask == 0 {
		t.Fatalf("ReplayTask of a task of about 10 MiB: %d of %d events, %d with the task, %v; want every event, the task left out of the last ones", events, len(h), withTask, err)
	}
}
