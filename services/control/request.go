package control

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/task"
)

// TaskIDFor returns the id of the task a request id creates for the
// caller principal (see requestid.Scope.TaskID), and a random id without
// a request id.
func TaskIDFor(principal, requestID string) string {
	if requestID == "" {
		return event.RandomID()
	}
	return requestid.ForPrincipal(principal).TaskID(requestID)
}

// claim spends requestID on one command: the RPC's name, the task it acts
// on (which must exist, so that a mistyped task id does not spend the
// request id) and the request as sent. It returns the id of the event
// the command records, derived from the caller and the request id, so
// that a retry finds that event in the task's history; without a request
// id it claims nothing and the event gets a random id. A request id first
// used otherwise is AlreadyExists, and nothing is appended.
func (p *Plane) claim(ctx context.Context, principal, command, taskID, requestID string, req proto.Message) (string, error) {
	return p.claimIn(ctx, requestid.ForPrincipal(principal), command, taskID, requestID, req)
}

// claimIn is claim with the request id in scope s.
func (p *Plane) claimIn(ctx context.Context, s requestid.Scope, command, taskID, requestID string, req proto.Message) (string, error) {
	if requestID == "" {
		return "", nil
	}
	if _, _, err := task.Load(ctx, p.log, taskID); err != nil {
		return "", err
	}
	return p.claimFor(ctx, s, command, taskID, requestID, req)
}

// claimFor is claimIn for a task that need not exist yet: the one a
// CreateTask opens.
func (p *Plane) claimFor(ctx context.Context, s requestid.Scope, command, taskID, requestID string, req proto.Message) (string, error) {
	if requestID == "" {
		return "", nil
	}
	if err := requestid.Claim(ctx, p.log, s, requestID, requestid.UseOf(command, taskID, req)); err != nil {
		return "", err
	}
	return s.EventID(taskID, requestID), nil
}
