package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// told is something Steward said or kept, and where: what
// TestSecretsNeverInClear greps for the clear values.
type told struct{ where, text string }

// planSecrets submits plans to task taskID whose steps call login (its
// password and api_key secret): one with the secret values literal in
// params, whose step's action carries them to the tool in clear; and a
// revision computing the password with an expression that quotes it,
// refused naming the field. It returns the values, and the refusal.
func planSecrets(t *testing.T, h *harness, tool *stewardtest.Tool, taskID, user, salt string) ([]string, []told) {
	t.Helper()
	ctx := context.Background()
	password, apiKey, quoted := "pw-"+salt+"-planned", "key-"+salt+"-planned", "pw-"+salt+"-quoted"
	params, err := structpb.NewStruct(map[string]any{"user": user, "password": password, "api_key": apiKey})
	if err != nil {
		t.Fatal(err)
	}
	sign := &stewardv1.ActionStep{Tool: "login", Target: "acct:42", Params: params, Rationale: argued}
	pl := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		{Id: "sign", Kind: &stewardv1.Step_Action{Action: sign}},
	}}
	submit := func(pl *stewardv1.Plan) error {
		_, err := h.agent.tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: taskID, Plan: pl, RequestId: fmt.Sprintf("plan-%s-%d", salt, pl.Version)}))
		return err
	}
	for range 2 { // the second a retry: the same plan, sent in clear again
		if err := submit(pl); err != nil {
			t.Fatalf("submit a plan with secret literals: %v", err)
		}
	}
	waitServed(t, h.agent.clients, taskID, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
		for _, st := range tk.Plan.GetSteps() {
			if st.StepId == "sign" {
				return st.Status == stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "step sign is " + st.Status.String() + ": " + st.Reason
			}
		}
		return false, "no step sign"
	})
	if w := tool.Worked(); !strings.Contains(string(w[len(w)-1].Params), `"password":"`+password+`"`) ||
		!strings.Contains(string(w[len(w)-1].Params), `"api_key":"`+apiKey+`"`) {
		t.Errorf("the plan's step sent %s; want the clear password and api_key", w[len(w)-1].Params)
	}

	computed := proto.CloneOf(pl)
	computed.Version = 2
	a := computed.Steps[0].GetAction()
	delete(a.Params.Fields, "password")
	a.ParamExprs = map[string]string{"password": "true ? '" + quoted + "' : 'pw-'"}
	err = submit(computed)
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `plan.steps[0].action.param_exprs["password"]`) {
		t.Errorf("a secret parameter computed from a literal: %v, want InvalidArgument naming plan.steps[0].action.param_exprs[\"password\"]", err)
	}
	return []string{password, apiKey, quoted}, []told{{"the refusal of a plan", fmt.Sprint(err)}}
}

// readSurfaces reads task taskID through the read RPCs that carry its
// plan besides GetTask: ListTasks, WatchTask and ReplayTask.
func readSurfaces(t *testing.T, h *harness, taskID string) []told {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []told
	add := func(where string, m proto.Message) {
		b, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, told{where, string(b)})
	}
	list, err := h.agent.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	add("ListTasks", list.Msg)
	watch, err := h.agent.query.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	var last uint64
	for watch.Receive() {
		add("WatchTask", watch.Msg())
		if last == 0 {
			last = watch.Msg().LastSequence
		}
		if r := watch.Msg().Record; r != nil && r.Sequence >= last {
			break
		}
	}
	replay, err := h.agent.audit.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	plans := 0
	for replay.Receive() {
		add("ReplayTask", replay.Msg())
		if replay.Msg().Record.GetEvent().GetPlanSubmitted() != nil {
			plans++
		}
	}
	if err := replay.Err(); err != nil || plans == 0 {
		t.Fatalf("ReplayTask: %d plans submitted, %v; want 1 or more", plans, err)
	}
	return out
}

// commitments returns the commitment objects of a plan's literal
// params, as served: what stands where each secret value was.
func commitments(t *testing.T, p *stewardv1.PlanState) map[string]any {
	t.Helper()
	b, err := protojson.Marshal(p.GetPlan().GetSteps()[0].GetAction().GetParams())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
