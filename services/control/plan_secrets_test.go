package control_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestPlanSecretLiteralsAreSealed: a foreach body's literal password is
// a commitment in the recorded plan, sealed beside it; a retry of the
// submission, in clear again, is answered as recorded; each item's
// action carries the same commitment, sealed anew, opening to the value;
// a revision computing the password from a literal, or from item over a
// literal list, is refused naming the field.
func TestPlanSecretLiteralsAreSealed(t *testing.T) {
	r := newHarness(t)
	r.register(t, &stewardv1.ToolContract{Name: "login", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, ParametersSchema: loginSchema})
	id := r.planTaskWith(t, "plan-secret", func(c *stewardv1.TaskContract) { c.AllowedTools = []string{"login"} }, nil)
	params, err := structpb.NewStruct(map[string]any{"user": "bob", "password": "pw-hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	body := &stewardv1.ActionStep{Tool: "login", Target: "acct", Params: params}
	p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{{Id: "each",
		Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "[1, 2]", MaxItems: 2,
			Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_Action{Action: body}}}}}}}
	r.runPlan(t, id, p)
	if _, created, err := r.submitPlan(id, "", p); err != nil || created {
		t.Fatalf("a retry of the plan: created %v, %v; want the plan as recorded", created, err)
	}

	tk, _ := r.step(id, "each", stepRunning)
	shown, _ := protojson.Marshal(tk.Plan)
	sealed := tk.Plan.GetSealedSecrets()
	if strings.Contains(string(shown), "hunter2") || len(sealed) != 1 || !strings.Contains(string(shown), `"$secret":"`+sealed[0].Commitment) {
		t.Fatalf("the recorded plan shows %s; want the password's commitment, sealed once", shown)
	}
	ids := task.FindStep(tk, "each").ActionIds
	if len(ids) != 2 {
		t.Fatalf("the foreach proposed %v; want one action per item", ids)
	}
	for _, aid := range ids {
		a := task.FindAction(tk, aid)
		if !strings.Contains(string(a.Request), sealed[0].Commitment) || len(a.SealedSecrets) != 1 {
			t.Fatalf("action %s: request %s, sealed %v; want the plan's commitment, sealed", aid, a.Request, a.SealedSecrets)
		}
		if v, err := r.sealer.Open(id, a.SealedSecrets[0].Commitment, a.SealedSecrets[0].Sealed); err != nil || string(v) != `"pw-hunter2"` {
			t.Errorf("action %s's sealed value opens to %s, %v", aid, v, err)
		}
	}

	computed := proto.CloneOf(p)
	computed.Version = 2
	a := computed.Steps[0].GetForeach().GetBody().GetAction()
	delete(a.Params.Fields, "password")
	a.ParamExprs = map[string]string{"password": "'pw-' + string(item)"}
	_, _, err = r.submitPlan(id, "", computed)
	var e *errs.Error
	if !errors.As(err, &e) || e.Field != `plan.steps[0].foreach.body.action.param_exprs["password"]` {
		t.Fatalf("a secret computed from a literal: %v; want it refused naming the field", err)
	}
	a.ParamExprs = map[string]string{"password": "item"}
	computed.Steps[0].GetForeach().Over = "['pw-a', 'pw-b']"
	_, _, err = r.submitPlan(id, "", computed)
	if !errors.As(err, &e) || e.Field != "plan.steps[0].foreach.over" || strings.Contains(e.Message, "pw-a") {
		t.Fatalf("secrets listed literally in over: %v; want it refused naming the field", err)
	}
}
