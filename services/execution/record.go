package execution

import (
	"context"
	"fmt"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// record appends one ledger step with the given deterministic id, so a
// step already on the log is not appended again.
func (p *Plane) record(ctx context.Context, taskID, id string, c cause, payload event.Payload) error {
	return p.recordIf(ctx, taskID, id, c, payload, nil)
}

// recordIf is record, appending nothing unless still holds of the task as
// it is when the step would be appended (nil: always).
func (p *Plane) recordIf(ctx context.Context, taskID, id string, c cause, payload event.Payload, still func(*stewardv1.Task) bool) error {
	ev, err := event.New(event.Meta{
		ID:            id,
		TaskID:        taskID,
		Actor:         &stewardv1.Actor{Principal: p.cfg.Worker, Plane: PlaneName},
		CausationID:   c.id,
		CorrelationID: c.correlation,
		// The plane's clock, which leases and expiries are read against.
		Time: p.now(),
	}, payload)
	if err != nil {
		return err
	}
	err = p.tasks.Write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if still != nil && !still(t) {
			return nil, nil
		}
		return ev, nil
	})
	if err != nil {
		return fmt.Errorf("record %s: %w", ev.Type, err)
	}
	return nil
}
