package taskstore

import (
	"context"

	"github.com/steward-run/steward/pkg/content"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Ancestors returns what content.Named asks of the tasks up a delegation:
// a task's parties, from the fold this process keeps; false for a task
// that cannot be read, which then names nobody.
func Ancestors(ctx context.Context, log *eventlog.Log) func(taskID string) (content.Parties, bool) {
	return func(taskID string) (content.Parties, bool) {
		var up content.Parties
		err := Peek(ctx, log, taskID, 0, func(t *stewardv1.Task) { up = content.PartiesOf(t) })
		return up, err == nil
	}
}
