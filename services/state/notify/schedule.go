package notify

import (
	"context"
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
)

// A schedule's firing that made no run is its owner's to hear of: one
// missed while Steward was down, one over the runs budget, one whose run
// was refused; and so is a run that failed. Its event is on the schedule's chain, not a task's: the
// was refused, one after the schedule's credential was revoked. Its event is on the schedule's chain, not a task's: the
// notification's task_id is the schedule's id and its tenant the
// schedule's. Each is sent once per sink under its event's id, as any.

// notRun: a firing recorded as making no run for a reason its owner
// should hear (a skip or a queue is the overlap policy doing its work).
func notRun(ev *stewardv1.Event) bool {
	switch ev.GetScheduleFired().GetFiring().GetDisposition() {
	case stewardv1.FiringDisposition_FIRING_DISPOSITION_MISSED, stewardv1.FiringDisposition_FIRING_DISPOSITION_OVER_BUDGET,
		stewardv1.FiringDisposition_FIRING_DISPOSITION_REFUSED, stewardv1.FiringDisposition_FIRING_DISPOSITION_REVOKED:
		return true
	}
	return false
}

// runFailed: a run that failed, or that was cancelled other than by a
// later firing (schedule.Announced). Its event is recorded once per run.
func runFailed(ev *stewardv1.Event) bool {
	return schedule.Announced(ev.GetScheduleRunEnded().GetEnd())
}

// scheduleEvent reports whether ev is on a schedule's chain.
func scheduleEvent(ev *stewardv1.Event) bool {
	return ev.GetScheduleFired() != nil || ev.GetScheduleRunEnded() != nil
}

// scheduleTenant is the tenant of schedule id, from its chain.
func (d *deliverer) scheduleTenant(ctx context.Context, id string) (string, error) {
	recs, err := d.n.cfg.Log.ReadSchedule(ctx, id)
	if err != nil {
		return "", err
	}
	s, err := schedule.Fold(recs)
	if err != nil {
		return "", err
	}
	return s.Tenant, nil
}

func scheduleAct(ev *stewardv1.Event) string {
	return "steward schedules get " + ev.TaskId
}

func runFailedAct(ev *stewardv1.Event) string {
	return fmt.Sprintf("steward tasks get %s; steward schedules get %s", ev.GetScheduleRunEnded().GetEnd().GetTaskId(), ev.TaskId)
}
