package plan_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
)

// fuzzLimits are small, so that the fuzzer meets every limit.
var fuzzLimits = plan.Limits{MaxSteps: 12, MaxFanOut: 3, MaxDepth: 6, MaxForeachItems: 5, MaxExprBytes: 256, MaxParamExprs: 4}

// FuzzValidatePlan checks plans written as JSON or in the binary form, as
// SubmitPlan will take them. (Named apart from pkg/toolreg's FuzzValidate, so that each can be
// run alone by name.) Validate never panics and answers the same twice; a
// refusal is Invalid, names a field under plan, and says why in a short,
// valid UTF-8 message. An accepted plan is accepted again after a trip
// through JSON and through the binary form, with the same hash; it diffs
// against itself as all kept; its roots are ready when nothing has run and
// nothing is ready when everything has; and each step's expressions
// evaluate over null results without a panic.
func FuzzValidatePlan(f *testing.F) {
	for _, seed := range []string{
		release,
		`{"version": 1, "ending": "PLAN_ENDING_HAND_BACK", "steps": [{"id": "a", "wait": {"until": "2030-01-01T00:00:00Z"}}]}`,
		`{"version": 1, "ending": "PLAN_ENDING_PRODUCE", "steps": [{"id": "a", "depends_on": ["b"], "action": {"tool": "http.get"}}, {"id": "b", "depends_on": ["a"], "action": {"tool": "http.get"}}]}`,
		`{"version": 2, "ending": "PLAN_ENDING_PRODUCE", "steps": [{"id": "a", "action": {"tool": "http.get"}}, {"id": "b", "depends_on": ["a"], "when": "steps.a.result.x.exists(v, v > 1)", "foreach": {"over": "steps.a.result.x", "max_items": 5, "body": {"sub_task": {"delegate_ref": "b", "contract": {"allowed_tools": ["http.get"]}}}}}]}`,
		`{"version": 1, "ending": "PLAN_ENDING_PRODUCE", "steps": [{"id": "a", "checkpoint": {"question": "ok?", "choices": ["y", "n"]}, "expect": "result == 'y'"}]}`,
	} {
		f.Add([]byte(seed))
		p := &stewardv1.Plan{}
		if err := protojson.Unmarshal([]byte(seed), p); err != nil {
			f.Fatal(err)
		}
		bin, err := proto.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bin)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// JSON, or else the binary form, which can carry what JSON cannot
		// (a NaN, a value of no kind).
		p := &stewardv1.Plan{}
		if protojson.Unmarshal(data, p) != nil && proto.Unmarshal(data, p) != nil {
			return
		}
		err := plan.Validate(p, fuzzLimits, env)
		if again := plan.Validate(p, fuzzLimits, env); errString(again) != errString(err) {
			t.Fatalf("Validate answered %v, then %v", err, again)
		}
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.Invalid || !strings.HasPrefix(e.Field, "plan") {
				t.Fatalf("a refusal that is not Invalid naming a field under plan: %#v", err)
			}
			if msg := err.Error(); !utf8.ValidString(msg) || len(msg) > 2048 {
				t.Fatalf("a refusal of %d bytes, valid UTF-8 %t: %q", len(msg), utf8.ValidString(msg), msg)
			}
			return
		}
		checkAccepted(t, p)
	})
}

// checkAccepted checks what holds of every plan Validate accepts.
func checkAccepted(t *testing.T, p *stewardv1.Plan) {
	h, err := plan.Hash(p)
	if err != nil {
		t.Fatalf("Hash of an accepted plan: %v", err)
	}
	js, err := protojson.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, decode := range map[string]func(*stewardv1.Plan) error{
		"JSON":   func(q *stewardv1.Plan) error { return protojson.Unmarshal(js, q) },
		"binary": func(q *stewardv1.Plan) error { return proto.Unmarshal(bin, q) },
	} {
		q := &stewardv1.Plan{}
		if err := decode(q); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := plan.Validate(q, fuzzLimits, env); err != nil {
			t.Fatalf("accepted, then refused after a trip through %s: %v", name, err)
		}
		if hq, _ := plan.Hash(q); hq != h {
			t.Fatalf("hash %s, then %s after a trip through %s", h, hq, name)
		}
	}
	r, err := plan.Diff(p, p)
	if err != nil || len(r.Kept) != len(p.Steps) || len(r.Changed)+len(r.Added)+len(r.Withdrawn) != 0 {
		t.Fatalf("a plan against itself: %+v, %v", r, err)
	}
	roots := plan.Ready(p, nil)
	if len(roots) == 0 {
		t.Fatalf("an acyclic plan with no step ready at the start")
	}
	all := map[string]stewardv1.StepStatus{}
	nulls := map[string]plan.Outcome{}
	for _, s := range p.Steps {
		all[s.Id] = stewardv1.StepStatus_STEP_STATUS_SUCCEEDED
		nulls[s.Id] = plan.Outcome{Status: stewardv1.StepStatus_STEP_STATUS_SUCCEEDED}
	}
	if ready := plan.Ready(p, all); len(ready) != 0 {
		t.Fatalf("steps ready when every one succeeded: %v", ready)
	}
	ctx := context.Background()
	b := plan.Bindings{Steps: nulls}
	for _, s := range p.Steps {
		_, _ = plan.EvalWhen(ctx, p, s.Id, b)
		_, _ = plan.EvalExpect(ctx, p, s.Id, b)
		if s.GetForeach() != nil {
			_, _ = plan.EvalForeach(ctx, p, s.Id, b)
		}
		if s.GetAction() != nil || s.GetForeach().GetBody().GetAction() != nil {
			_, _, _ = plan.EvalParams(ctx, p, s.Id, b)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
