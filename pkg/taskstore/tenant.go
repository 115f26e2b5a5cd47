package taskstore

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Tenant returns the tenant task taskID belongs to ("" the default
// tenant), as its TaskCreated recorded it: NotFound for a task that does
// not exist, Invalid for an id that cannot be one. A task's tenant never
// changes, so the fold this process keeps answers without a read once it
// has seen the task.
func (s *Store) Tenant(ctx context.Context, taskID string) (string, error) {
	if !eventlog.ValidTaskID(taskID) {
		return "", errs.Field("task_id", "is not a task id")
	}
	var tenant string
	err := s.Peek(ctx, taskID, 0, func(t *stewardv1.Task) { tenant = t.Tenant })
	return tenant, err
}
