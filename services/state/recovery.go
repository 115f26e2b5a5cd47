package state

import (
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// RecoveryBuckets are the upper bounds, in seconds, of the recovery time
// histogram: a status query settles an unknown outcome in seconds, a
// person in hours or days, and a stall ends when someone looks.
var RecoveryBuckets = []float64{1, 10, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600}

// What a recovery recovered from: the recovery time histogram's from
// label, by index.
const (
	fromUnknownOutcome = iota
	fromStall
)

var recoveryLabels = [2]string{"unknown_outcome", "stall"}

// recoveries is what one task's view remembers for the recovery time
// histogram: recoveries done, and those still open. The fold keeps only
// where a task stands now (a settled outcome forgets when it was
// unknown; a stall mark is cleared by the next event), so the projection
// notes the times as it applies the events. A restart applies the same
// events and notes the same times: like every view, it is a projection of
// the log.
type recoveries struct {
	// took holds each recovery's duration, by what it recovered from.
	took [2][]time.Duration
	// unknownSince maps an action whose outcome is unknown to when it
	// became so.
	unknownSince map[string]time.Time
	// stalledAt is when the task was marked stalled; zero when it is not.
	stalledAt time.Time
}

// statusBefore returns the status, before ev, of the action ev may move
// into or out of an unknown outcome, and its id; "" for any other event.
func (v *view) statusBefore(ev *stewardv1.Event) (string, stewardv1.ActionStatus) {
	var id string
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ActionOutcomeRecorded:
		id = p.ActionOutcomeRecorded.ActionId
	case *stewardv1.Event_ActionDenied: // a denial after calls that may have worked
		id = p.ActionDenied.ActionId
	case *stewardv1.Event_ApprovalDecided: // a rejection, likewise
		id = p.ApprovalDecided.ActionId
	case *stewardv1.Event_ActionSettled:
		id = p.ActionSettled.ActionId
	default:
		return "", 0
	}
	if i, ok := v.at[id]; ok {
		return id, v.task.Actions[i].Status
	}
	return id, 0
}

// noteRecovery notes what ev, just folded into v, did to a recovery: an
// outcome that became unknown or was settled (actionID's status was
// before), a stall that began or ended.
func (v *view) noteRecovery(ev *stewardv1.Event, actionID string, before stewardv1.ActionStatus) {
	if ev.Time == nil {
		return
	}
	at := ev.Time.AsTime()
	r := &v.recoveries
	if ev.GetTaskStalled() != nil {
		if r.stalledAt.IsZero() {
			r.stalledAt = at
		}
	} else if !r.stalledAt.IsZero() && v.task.StalledSince == nil {
		// The event cleared the mark (the fold decides what is
		// progress): the stall ended with it.
		r.took[fromStall] = append(r.took[fromStall], max(at.Sub(r.stalledAt), 0))
		r.stalledAt = time.Time{}
	}
	i, ok := v.at[actionID]
	if actionID == "" || !ok {
		return
	}
	const unknown = stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN
	switch now := v.task.Actions[i].Status; {
	case before != unknown && now == unknown:
		if r.unknownSince == nil {
			r.unknownSince = map[string]time.Time{}
		}
		r.unknownSince[actionID] = at
	case before == unknown && now != unknown:
		if since, ok := r.unknownSince[actionID]; ok {
			r.took[fromUnknownOutcome] = append(r.took[fromUnknownOutcome], max(at.Sub(since), 0))
			delete(r.unknownSince, actionID)
		}
	}
}
