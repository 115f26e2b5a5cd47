package plan_test

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
)

func TestDiff(t *testing.T) {
	old := mustPlan(t, release)
	next := proto.CloneOf(old)
	next.Version = 2
	step(next, "check").GetAction().ParamExprs["count"] = "size(steps.fetch.result.items) + 1"
	// notify is dropped: approve no longer waits for it, and publish no
	// longer reads it (Validate would refuse the read).
	next.Steps = append(next.Steps[:2], next.Steps[3:]...)
	step(next, "approve").DependsOn = []string{"check", "each"}
	delete(step(next, "publish").GetAction().ParamExprs, "notified")
	next.Steps = append(next.Steps, action("announce", "chat.post", "publish"))
	if err := plan.Validate(next, plan.Limits{}, env); err != nil {
		t.Fatal(err)
	}

	got, err := plan.Diff(old, next)
	if err != nil {
		t.Fatal(err)
	}
	want := plan.Revision{
		Kept:      []string{"fetch", "each", "cool_off"},
		Changed:   []string{"check", "approve", "publish"},
		Added:     []string{"announce"},
		Withdrawn: []string{"notify"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Diff = %+v\nwant   %+v", got, want)
	}

	same, err := plan.Diff(old, old)
	if err != nil || len(same.Kept) != len(old.Steps) || same.Changed != nil || same.Added != nil || same.Withdrawn != nil {
		t.Fatalf("a plan against itself: %+v, %v", same, err)
	}
}

func TestHash(t *testing.T) {
	p := mustPlan(t, release)
	h, err := plan.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 64 {
		t.Fatalf("hash %q is not hex SHA-256", h)
	}

	// The same plan decoded again, and built with its maps filled in
	// another order, hashes the same: maps and field order do not count.
	again := mustPlan(t, release)
	exprs := step(again, "publish").GetAction().ParamExprs
	step(again, "publish").GetAction().ParamExprs = map[string]string{"notified": exprs["notified"], "items": exprs["items"]}
	if h2, _ := plan.Hash(again); h2 != h {
		t.Fatalf("the same plan hashed %s, then %s", h, h2)
	}
	// Through the binary wire form and back, too.
	b, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	wired := &stewardv1.Plan{}
	if err := proto.Unmarshal(b, wired); err != nil {
		t.Fatal(err)
	}
	if h3, _ := plan.Hash(wired); h3 != h {
		t.Fatalf("through the wire: %s, want %s", h3, h)
	}

	// An unset on_failure reads as escalate, so spelling it out is the
	// same plan: the same hash, and a revision that does keeps the step.
	spelt, unset := mustPlan(t, release), 0
	for _, s := range spelt.Steps {
		if s.OnFailure == stewardv1.OnFailure_ON_FAILURE_UNSPECIFIED {
			s.OnFailure, unset = stewardv1.OnFailure_ON_FAILURE_ESCALATE, unset+1
		}
	}
	if unset == 0 {
		t.Fatal("release spells out every on_failure: this checks nothing")
	}
	if hs, _ := plan.Hash(spelt); hs != h {
		t.Fatalf("on_failure spelt out: hash %s, want %s", hs, h)
	}
	if d, err := plan.Diff(p, spelt); err != nil || len(d.Kept) != len(p.Steps) {
		t.Fatalf("on_failure spelt out: Diff = %+v, %v; want every step kept", d, err)
	}

	changes := map[string]func(*stewardv1.Plan){
		"version":    func(p *stewardv1.Plan) { p.Version = 2 },
		"ending":     func(p *stewardv1.Plan) { p.Ending = stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK },
		"expression": func(p *stewardv1.Plan) { step(p, "notify").When = "true" },
		"a param": func(p *stewardv1.Plan) {
			step(p, "notify").GetAction().Params.Fields["channel"] = structpb.NewStringValue("#ops")
		},
		"order": func(p *stewardv1.Plan) { p.Steps[1], p.Steps[2] = p.Steps[2], p.Steps[1] },
	}
	for name, change := range changes {
		q := mustPlan(t, release)
		change(q)
		if hq, err := plan.Hash(q); err != nil || hq == h {
			t.Errorf("changing the %s: hash %s, %v", name, hq, err)
		}
	}
}

// TestHashIsStable pins the hash of release: a change to the canonical
// form would unbind every approval already given to a plan.
func TestHashIsStable(t *testing.T) {
	h, err := plan.Hash(mustPlan(t, release))
	if err != nil {
		t.Fatal(err)
	}
	if h != pinnedHash {
		t.Fatalf("Hash(release) = %s, want %s", h, pinnedHash)
	}
}

const pinnedHash = "7074f6d8a4b67a2c45270093fec9f92b78802e64d0e4aa61d082cbfbff037aee"
