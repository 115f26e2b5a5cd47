package plandriver

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/timer"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Wait steps (docs/plans.md): a step that runs no action and ends when
// its time comes, on a durable timer (pkg/timer), so that neither a
// restart of the process nor of the server loses or shortens it.
// WaitTimerKind is the kind of the timers that end wait steps.
const WaitTimerKind = "control.plan_wait"

// startWait starts wait step st: it sets a timer at the wait's end — its
// until, or its duration after now — and then records the start with
// that end. A timer set by a pass that did not record its start (a
// crash, a lost race) wakes the driver for nothing.
func (r *planPass) startWait(ctx context.Context, st *stewardv1.PlanStepState, w *stewardv1.WaitStep) error {
	now := r.d.cfg.Now()
	until := now.Add(w.GetDuration().AsDuration())
	if w.GetUntil() != nil {
		until = w.GetUntil().AsTime()
	}
	if until.After(now) { // a time already past ends the wait at once
		if r.d.cfg.Timers == nil {
			// A wiring mistake, not the plan's: wait for a plane that has
			// timers rather than fail the step.
			return errs.New(errs.Unavailable, "this control plane has no timers to end wait step %s of task %s", st.StepId, r.taskID())
		}
		id := r.taskID() + "/" + st.StepId + "/" + strconv.FormatUint(uint64(r.version()), 10) + waitTimerEnd(st.Attempts+1, until)
		if err := r.d.cfg.Timers.Set(ctx, WaitTimerKind, id, until, []byte(r.taskID())); err != nil {
			return err
		}
	}
	return r.started(ctx, st, &stewardv1.PlanStepStarted{WaitUntil: timestamppb.New(until)})
}

// startWaitStep starts wait step st (startWait).
func (r *planPass) startWaitStep(ctx context.Context, st *stewardv1.PlanStepState, step *stewardv1.Step, _ map[string]plan.Outcome) error {
	return r.startWait(ctx, st, step.GetWait())
}

// waitTimerEnd ends the id of the timer of a wait step's attempt that
// ends at until (after the task, the step and the plan version it
// started under).
func waitTimerEnd(attempt uint32, until time.Time) string {
	return "/" + strconv.FormatUint(uint64(attempt), 10) + "/" + until.UTC().Format(time.RFC3339Nano)
}

// waited ends running wait step st if its time has come: by the plane's
// clock, or because its own timer fired — the timer is the clock that
// ends a wait, and a plane whose clock runs behind the server's would
// otherwise wait on for a timer that has fired already.
func (r *planPass) waited(ctx context.Context, st *stewardv1.PlanStepState) (bool, error) {
	fired := strings.HasPrefix(r.timerID, r.taskID()+"/"+st.StepId+"/") && strings.HasSuffix(r.timerID, waitTimerEnd(st.Attempts, st.WaitUntil.AsTime()))
	if st.WaitUntil.AsTime().After(r.d.cfg.Now()) && !fired {
		return false, nil // its timer brings us back
	}
	return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "waited until "+st.WaitUntil.AsTime().UTC().Format(time.RFC3339))
}

// OnWait is a wait step's timer: a pass over its task, read as the
// log has it now, that ends the wait the timer is for.
func (d *Driver) OnWait(ctx context.Context, f timer.Fired) error {
	return d.drive(ctx, &planPass{d: d, seq: math.MaxUint64, timerID: f.ID}, string(f.Payload))
}
