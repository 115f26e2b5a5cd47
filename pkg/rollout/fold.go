package rollout

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Fold folds a rollout's chain, in order.
func Fold(recs []*stewardv1.EventRecord) (*stewardv1.Rollout, error) {
	if len(recs) == 0 {
		return nil, errs.New(errs.NotFound, "no events")
	}
	r := &stewardv1.Rollout{}
	for _, rec := range recs {
		if err := Apply(r, rec.Event); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Apply folds ev into r, refusing an event that does not follow
// (FailedPrecondition) or that its type's owner did not write.
func Apply(r *stewardv1.Rollout, ev *stewardv1.Event) error {
	if owner := event.Owner(ev.Type); owner == "" || ev.GetActor().GetPlane() != owner {
		return errs.New(errs.Corrupt, "event %s of type %s is not written by its owner", ev.EventId, ev.Type)
	}
	if r.RolloutId == "" && ev.GetRolloutStarted() == nil {
		return errs.New(errs.FailedPrecondition, "rollout %s: %s before its start", ev.TaskId, ev.Type)
	}
	if s := ev.GetRolloutStarted(); s != nil {
		if r.RolloutId != "" {
			return errs.New(errs.FailedPrecondition, "rollout %s exists", ev.TaskId)
		}
		*r = stewardv1.Rollout{RolloutId: ev.TaskId, Tenant: s.Tenant, Spec: proto.CloneOf(s.Spec),
			State: stewardv1.RolloutState_ROLLOUT_STATE_RAMPING, Share: s.GetSpec().GetSteps()[0],
			Figures: &stewardv1.RolloutFigures{}, StartedBy: ev.GetActor().GetPrincipal(), StartTime: ev.Time}
		return nil
	}
	if r.State != stewardv1.RolloutState_ROLLOUT_STATE_RAMPING {
		return errs.New(errs.FailedPrecondition, "rollout %s is %s: it takes no %s", r.RolloutId, r.State, ev.Type)
	}
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_RolloutTaskEnded:
		e := p.RolloutTaskEnded
		if e.Step != r.Step {
			return errs.New(errs.FailedPrecondition, "rollout %s is at step %d, not %d", r.RolloutId, r.Step, e.Step)
		}
		count(r.Figures, e)
	case *stewardv1.Event_RolloutWidened:
		next := p.RolloutWidened.Step
		if next != r.Step+1 || int(next) >= len(r.Spec.Steps) {
			return errs.New(errs.FailedPrecondition, "rollout %s at step %d cannot widen to %d", r.RolloutId, r.Step, next)
		}
		r.Step, r.Share, r.Figures = next, r.Spec.Steps[next], &stewardv1.RolloutFigures{Step: next}
	case *stewardv1.Event_RolloutRolledBack:
		r.State, r.Reason, r.EndTime = stewardv1.RolloutState_ROLLOUT_STATE_ROLLED_BACK, p.RolloutRolledBack.Reason, ev.Time
		if p.RolloutRolledBack.ByHand {
			r.RolledBackBy = ev.GetActor().GetPrincipal()
		}
	case *stewardv1.Event_RolloutCompleted:
		r.State, r.EndTime = stewardv1.RolloutState_ROLLOUT_STATE_COMPLETED, ev.Time
	default:
		return errs.New(errs.Invalid, "event %s of type %s is not a rollout's", ev.EventId, ev.Type)
	}
	return nil
}

// count adds one ended candidate task to f.
func count(f *stewardv1.RolloutFigures, e *stewardv1.RolloutTaskEnded) {
	f.Ended++
	switch {
	case e.Failed:
		f.Failed++
	case e.Accepted:
		f.Accepted++
	}
}

// Verdict is what a step's figures call for.
type Verdict int

const (
	Wait     Verdict = iota // too few candidate tasks ended yet
	RollBack                // a threshold is passed
	Widen                   // within thresholds: the next step
	Complete                // within thresholds at the 100% step
)

// Judge judges r's current step from its figures: once min_tasks
// candidate tasks ended, a failure rate above max_failure_rate or an
// accepted rate below min_accepted_rate rolls it back, and anything else
// widens it (completes it after the last step). A threshold already
// bound to be passed at min_tasks — more failures, or more ends without
// an accepted output, than the rates allow among min_tasks — rolls back
// at once: later ends can only add to them. reason says why.
func Judge(r *stewardv1.Rollout) (v Verdict, reason string) {
	if r.State != stewardv1.RolloutState_ROLLOUT_STATE_RAMPING {
		return Wait, ""
	}
	s, f := r.Spec, r.Figures
	n := max(f.Ended, s.MinTasks)
	if why := passed(s, f, n); why != "" {
		return RollBack, why
	}
	if f.Ended < s.MinTasks {
		return Wait, ""
	}
	if int(r.Step) == len(s.Steps)-1 {
		return Complete, ""
	}
	return Widen, ""
}

// passed says which threshold figures f pass out of n ended tasks, or "".
func passed(s *stewardv1.RolloutSpec, f *stewardv1.RolloutFigures, n uint32) string {
	if failRate := float64(f.Failed) / float64(n); failRate > s.MaxFailureRate {
		return fmt.Sprintf("step %d (%d%%): %d of %d candidate tasks failed (%d ended; at least %d judged), rate %.2f above max_failure_rate %.2f",
			f.Step, s.Steps[f.Step], f.Failed, n, f.Ended, s.MinTasks, failRate, s.MaxFailureRate)
	}
	// At best every task still to end before n is accepted.
	if best := float64(n-(f.Ended-f.Accepted)) / float64(n); best < s.MinAcceptedRate {
		return fmt.Sprintf("step %d (%d%%): %d of %d ended candidate tasks accepted (at least %d judged), rate %.2f at best, below min_accepted_rate %.2f",
			f.Step, s.Steps[f.Step], f.Accepted, f.Ended, s.MinTasks, best, s.MinAcceptedRate)
	}
	return ""
}
