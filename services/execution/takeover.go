package execution

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// takeOver reacts to a task marked stalled — no event, not even a
// heartbeat, for the task's stall threshold — by carrying on what it was
// left at, as a resume does (carryOn). It is the backstop: a worker that
// dies holding an action is taken over within its lease when the event
// behind the work is delivered again (see hold); the stall mark finds
// what no event is left to bring back, such as work whose worker's own
// consumer went with it.
func (p *Plane) takeOver(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := p.tasks.Load(ctx, rec.Event.TaskId)
	if err != nil {
		return err
	}
	if t.StalledSince == nil || !task.Working(t.Status) {
		return nil // it moved on since
	}
	return p.carryOn(ctx, t, causeOf(rec))
}
