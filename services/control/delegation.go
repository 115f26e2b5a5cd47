package control

import (
	"context"
	"github.com/steward-run/steward/pkg/action"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/taskstore"
)

// delegation is how a task makes sub-tasks and what it lends them: a
// sub-task delegated (delegate.go) with a share of its parent's budget
// reserved for it and given back when it ends (reserve.go), and the
// budget a task reports and is raised (budget.go). It reaches the rest
// of the plane only through making.
type delegation struct {
	making
	log   *eventlog.Log
	tasks *taskstore.Store
	now   func() time.Time
	// requests and results: where a fork's carried content is copied
	// (forkcontent.go).
	requests, results *action.Store
}

// making is commands, and what a sub-task's creation shares with
// CreateTask (create.go): a task made under the quotas, under a request
// id, by a credential in force.
type making interface {
	commands
	command(ctx context.Context, principal, taskID, id, requestID string, payload event.Payload) (*stewardv1.Task, error)
	admitTask(ctx context.Context, o owner, taskID string) (done func(seq uint64), err error)
	requestedTask(ctx context.Context, principal, requestID string) (id string, legacy bool, err error)
	exists(taskID string) func(context.Context) bool
	create(ctx context.Context, principal, tenant, taskID, requestID string, contract *stewardv1.TaskContract) (*stewardv1.Task, bool, error)
	credentialInForce(ctx context.Context, t *stewardv1.Task, now time.Time) error
	claimRequestIDFor(ctx context.Context, principal, command, taskID, requestID string, req proto.Message, opts ...requestid.Option) (*use, error)
}
