package execution

import (
	"context"
	"fmt"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
)

// record appends one ledger step with the given deterministic id, so a
// step already on the log is not appended again.
func (p *Plane) record(ctx context.Context, taskID, id string, c cause, payload event.Payload) error {
	return p.recordIf(ctx, taskID, id, c, payload, nil)
}

// recordIf is record, appending nothing unless still holds of the task as
// it is when the step would be appended (nil: always).
func (p *Plane) recordIf(ctx context.Context, taskID, id string, c cause, payload event.Payload, still func(*stewardv1.Task) bool) error {
	ev, err := p.step(taskID, id, c, payload)
	if err != nil {
		return err
	}
	if err := p.tasks.Write(ctx, taskID, onlyIf(ev, still)); err != nil {
		return fmt.Errorf("record %s: %w", ev.Type, err)
	}
	return nil
}

// recordWhere is recordIf for a caller that reads what came of the step:
// it returns the task as the write left it, with the step or without it
// when still did not hold. loaded is the task as the caller loaded it and
// left it, which the first try builds on without reading the log again
// (taskstore.UpdateFrom; it becomes the task after); nil when the caller
// holds none.
func (p *Plane) recordWhere(ctx context.Context, loaded *stewardv1.Task, taskID, id string, c cause, payload event.Payload, still func(*stewardv1.Task) bool) (*stewardv1.Task, error) {
	ev, err := p.step(taskID, id, c, payload)
	if err != nil {
		return nil, err
	}
	var after *stewardv1.Task
	if loaded != nil {
		after, err = p.tasks.UpdateFrom(ctx, loaded, onlyIf(ev, still))
	} else {
		after, err = p.tasks.Update(ctx, taskID, onlyIf(ev, still))
	}
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", ev.Type, err)
	}
	return after, nil
}

// step is the event of one ledger step of this worker's.
func (p *Plane) step(taskID, id string, c cause, payload event.Payload) (*stewardv1.Event, error) {
	return event.New(event.Meta{
		ID:            id,
		TaskID:        taskID,
		Actor:         &stewardv1.Actor{Principal: p.cfg.Worker, Plane: PlaneName},
		CausationID:   c.id,
		CorrelationID: c.correlation,
		// The plane's clock, which leases and expiries are read against.
		Time: p.now(),
	}, payload)
}

// onlyIf builds ev while still holds of the task (nil: always).
func onlyIf(ev *stewardv1.Event, still func(*stewardv1.Task) bool) taskstore.Build {
	return func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if still != nil && !still(t) {
			return nil, nil
		}
		return ev, nil
	}
}
