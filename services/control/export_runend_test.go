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
