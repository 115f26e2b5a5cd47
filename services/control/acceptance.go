package control

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
)

// acceptance is how a task's result comes to be: the artifacts submitted
// (artifact.go), the task marked produced and its criteria evaluated
// (produce.go), and its review, accepted or returned (accept.go). It
// reaches the rest of the plane only through commands.
type acceptance struct {
	commands
	quota   *gate
	log     *eventlog.Log
	tasks   *taskstore.Store
	results *action.Store
	// criteria keeps the acceptance criteria compiled (criteria.go).
	criteria *programCache
	now      func() time.Time
	// Artifact size limits; see Config.
	maxInline, maxReferenced int64
}

// commands is what the groups of the control plane's commands share with
// it: a request id claimed (request.go), an event made and written to a
// task, the actor of a principal, the check of a credential.
type commands interface {
	claimRequestID(ctx context.Context, principal, command, taskID, requestID string, req proto.Message) (*use, error)
	apply(ctx context.Context, taskID string, build taskstore.Build) (*stewardv1.Task, error)
	event(meta event.Meta, payload event.Payload) (*stewardv1.Event, error)
	actor(principal string) *stewardv1.Actor
	notRevoked(ctx context.Context, taskID, what string) error
}
