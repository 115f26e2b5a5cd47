package rollout_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rollout"
)

// TestCandidateSplitIsFixedAndNested: the split of a fixed set of task ids
// is the same on every run (replay never recomputes it, but two planes
// assigning must agree), near the share, and a wider share keeps every
// task a narrower one gave the candidate.
func TestCandidateSplitIsFixedAndNested(t *testing.T) {
	want := map[uint32]int{10: wantAt10, 50: wantAt50, 100: 1000}
	for share, n := range want {
		got := 0
		for i := range 1000 {
			id := fmt.Sprintf("task-%d", i)
			c := rollout.Candidate("ro-fixed", id, share)
			if c {
				got++
			}
			if rollout.Candidate("ro-fixed", id, 10) && !c {
				t.Errorf("%s is the candidate's at 10%% but not at %d%%", id, share)
			}
		}
		if got != n {
			t.Errorf("share %d%%: %d of 1000 tasks got the candidate, want %d", share, got, n)
		}
	}
}

// The split of task-0..task-999 under ro-fixed.
const wantAt10, wantAt50 = 99, 508

func spec() *stewardv1.RolloutSpec {
	return &stewardv1.RolloutSpec{Tool: "t", CandidateVersion: "2", StableVersion: "1", Steps: []uint32{10, 50, 100},
		MinTasks: 4, MaxFailureRate: 0.25, MinAcceptedRate: 0.5}
}

func TestCheckSpecNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(s *stewardv1.RolloutSpec)
	}{
		{"spec.tool", func(s *stewardv1.RolloutSpec) { s.Tool = "" }},
		{"spec.candidate_version", func(s *stewardv1.RolloutSpec) { s.CandidateVersion = "" }},
		{"spec.candidate_version", func(s *stewardv1.RolloutSpec) { s.CandidateVersion = "1" }},
		{"spec.stable_version", func(s *stewardv1.RolloutSpec) { s.StableVersion = "" }},
		{"spec.steps", func(s *stewardv1.RolloutSpec) { s.Steps = nil }},
		{"spec.steps[1]", func(s *stewardv1.RolloutSpec) { s.Steps = []uint32{50, 50, 100} }},
		{"spec.steps[0]", func(s *stewardv1.RolloutSpec) { s.Steps = []uint32{0, 100} }},
		{"spec.steps[1]", func(s *stewardv1.RolloutSpec) { s.Steps = []uint32{10, 90} }},
		{"spec.min_tasks", func(s *stewardv1.RolloutSpec) { s.MinTasks = 0 }},
		{"spec.max_failure_rate", func(s *stewardv1.RolloutSpec) { s.MaxFailureRate = 1.5 }},
		{"spec.min_accepted_rate", func(s *stewardv1.RolloutSpec) { s.MinAcceptedRate = -1 }},
		{"spec.max_failure_rate", func(s *stewardv1.RolloutSpec) { s.MaxFailureRate = math.NaN() }},
		{"spec.min_accepted_rate", func(s *stewardv1.RolloutSpec) { s.MinAcceptedRate = math.NaN() }},
	} {
		s := spec()
		tc.edit(s)
		var e *errs.Error
		if err := rollout.CheckSpec(s); !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("%v: got %v, want an error naming %s", s, err, tc.field)
		}
	}
	if err := rollout.CheckSpec(spec()); err != nil {
		t.Errorf("a good spec: %v", err)
	}
}

// TestJudge: a step waits for min_tasks ends, then widens, completes or
// rolls back; a threshold bound to be passed rolls back before.
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		step                    uint32
		ended, failed, accepted uint32
		want                    rollout.Verdict
	}{
		{"too few ended", 0, 3, 0, 3, rollout.Wait},
		{"one failure of four is not above 0.25", 0, 4, 1, 3, rollout.Widen},
		{"two failures among min_tasks, before them", 0, 2, 2, 0, rollout.RollBack},
		{"failure rate above", 0, 5, 2, 3, rollout.RollBack},
		{"accepted rate below (cancelled ends)", 0, 4, 0, 1, rollout.RollBack},
		{"three unaccepted of four can no longer reach 0.5", 0, 3, 0, 0, rollout.RollBack},
		{"the last step within", 2, 4, 0, 4, rollout.Complete},
	} {
		r := &stewardv1.Rollout{RolloutId: "ro", Spec: spec(), State: stewardv1.RolloutState_ROLLOUT_STATE_RAMPING, Step: tc.step,
			Figures: &stewardv1.RolloutFigures{Step: tc.step, Ended: tc.ended, Failed: tc.failed, Accepted: tc.accepted}}
		if got, why := rollout.Judge(r); got != tc.want || (got == rollout.RollBack) != (why != "") {
			t.Errorf("%s: got %v (%q), want %v", tc.name, got, why, tc.want)
		}
	}
}
