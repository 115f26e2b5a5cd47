// Package rollout is the pure part of a tool version's ramp-up
// (docs/rollouts.md): checking a spec, folding a rollout's chain,
// assigning a task to the candidate or the stable version, and judging a
// step from the candidate tasks that ended during it.
package rollout

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// MaxSteps bounds a spec's steps.
const MaxSteps = 20

// CheckSpec refuses a spec that cannot ramp, naming its field under
// "spec.". Whether its versions are registered is the caller's check.
func CheckSpec(s *stewardv1.RolloutSpec) error {
	switch {
	case s == nil:
		return errs.Field("spec", "is required")
	case s.Tool == "":
		return errs.Field("spec.tool", "is required")
	case s.CandidateVersion == "":
		return errs.Field("spec.candidate_version", "is required")
	case s.StableVersion == "":
		return errs.Field("spec.stable_version", "is required")
	case s.CandidateVersion == s.StableVersion:
		return errs.Field("spec.candidate_version", "is the stable version; a rollout ramps another one")
	case len(s.Steps) == 0 || len(s.Steps) > MaxSteps:
		return errs.Field("spec.steps", "want 1 to %d shares in percent, the last 100", MaxSteps)
	case s.MinTasks == 0:
		return errs.Field("spec.min_tasks", "must be at least 1: a step is judged on the candidate tasks that ended")
	// Written so that NaN, which no comparison holds for, is out of range
	// too: a NaN threshold would never be passed.
	case !(s.MaxFailureRate >= 0 && s.MaxFailureRate <= 1):
		return errs.Field("spec.max_failure_rate", "must be between 0 and 1")
	case !(s.MinAcceptedRate >= 0 && s.MinAcceptedRate <= 1):
		return errs.Field("spec.min_accepted_rate", "must be between 0 and 1")
	}
	for i, share := range s.Steps {
		if share == 0 || share > 100 || i > 0 && share <= s.Steps[i-1] {
			return errs.Field(fmt.Sprintf("spec.steps[%d]", i), "%d: shares must increase, each 1 to 100", share)
		}
	}
	if last := s.Steps[len(s.Steps)-1]; last != 100 {
		return errs.Field(fmt.Sprintf("spec.steps[%d]", len(s.Steps)-1), "%d: the last step must be 100", last)
	}
	return nil
}

// Candidate reports whether task taskID, created while rollout id is at
// share percent, gets the candidate: a hash of both ids against the
// share, so that the same task always lands the same way and a wider
// share keeps every task a narrower one gave the candidate.
func Candidate(rolloutID, taskID string, share uint32) bool {
	sum := sha256.Sum256([]byte(rolloutID + "\x00" + taskID))
	return uint32(binary.BigEndian.Uint64(sum[:8])%100) < share
}

// Assign is the assignment of task taskID by RAMPING rollout r.
func Assign(r *stewardv1.Rollout, taskID string) *stewardv1.RolloutAssignment {
	a := &stewardv1.RolloutAssignment{RolloutId: r.RolloutId, Tool: r.Spec.Tool, Version: r.Spec.StableVersion, Step: r.Step, Share: r.Share}
	if Candidate(r.RolloutId, taskID, r.Share) {
		a.Version, a.Candidate = r.Spec.CandidateVersion, true
	}
	return a
}

// Version is the version a task resolves to under r: a task r assigned
// takes its assignment while r ramps; once r rolled back every task that
// would take the candidate takes the stable version instead (running
// ones included), and once it completed the stable becomes the
// candidate. def is the version the task takes without r; assigned is
// r's assignment of it, nil for none. It returns "" when r changes
// nothing.
func Version(r *stewardv1.Rollout, assigned *stewardv1.RolloutAssignment, def string) string {
	s := r.GetSpec()
	switch r.State {
	case stewardv1.RolloutState_ROLLOUT_STATE_RAMPING:
		if assigned != nil {
			return assigned.Version
		}
	case stewardv1.RolloutState_ROLLOUT_STATE_ROLLED_BACK:
		if assigned != nil || def == s.CandidateVersion {
			return s.StableVersion
		}
	case stewardv1.RolloutState_ROLLOUT_STATE_COMPLETED:
		if assigned != nil || def == s.StableVersion {
			return s.CandidateVersion
		}
	}
	return ""
}

// TaskEndedEventID is the id of the count of task taskID's end on rollout
// id: one per task, however often its end is seen.
func TaskEndedEventID(id, taskID string) string {
	return event.ID(id, event.TypeRolloutTaskEnded, taskID)
}
