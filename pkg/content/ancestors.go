package content

import (
	"context"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
)

// Ancestors returns what Named asks of the tasks up a delegation: a
// task's parties, from the fold this process keeps; false for a task that
// cannot be read, which then names nobody. It lives here, not in
// taskstore, so that the test kit (which pkg/rpc's tests use) does not
// reach pkg/rpc through taskstore.
func Ancestors(ctx context.Context, log *eventlog.Log) func(taskID string) (Parties, bool) {
	return func(taskID string) (Parties, bool) {
		var up Parties
		err := taskstore.Peek(ctx, log, taskID, 0, func(t *stewardv1.Task) { up = PartiesOf(t) })
		return up, err == nil
	}
}
