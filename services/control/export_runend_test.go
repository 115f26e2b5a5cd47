package control

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// RunEnded delivers the end of run taskID to its schedule's reaction
// again, as a redelivery or a second control plane would.
func (p *Plane) RunEnded(ctx context.Context, taskID string) error {
	return p.schedules.runEnded(ctx, &stewardv1.EventRecord{Event: &stewardv1.Event{TaskId: taskID}})
}

// SubmitTemplatePlan delivers run taskID's credential's issue to the
// template plan's reaction again, as a redelivery or a second firing's
// run (the same task) would.
func (p *Plane) SubmitTemplatePlan(ctx context.Context, taskID string) error {
	return p.schedules.submitTemplatePlan(ctx, &stewardv1.EventRecord{Event: &stewardv1.Event{TaskId: taskID}})
}
