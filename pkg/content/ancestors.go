package content

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
)

// Ancestors returns what Named asks of the tasks up a delegation: a
// task's parties, from the fold this process keeps; false for a task that
// cannot be read, which then names nobody. It lives here, not in
// taskstore, so that the test kit (which pkg/rpc's tests use) does not
// reach pkg/rpc through taskstore.
func Ancestors(ctx context.Context, tasks *taskstore.Store) func(taskID string) (Parties, bool) {
	return func(taskID string) (Parties, bool) {
		var up Parties
		err := tasks.Peek(ctx, taskID, 0, func(t *stewardv1.Task) { up = PartiesOf(t) })
		return up, err == nil
	}
}
