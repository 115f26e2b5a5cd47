package control

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
)

// TaskIDFor returns the id of the task a request id creates for the
// caller principal (see requestid.Scope.TaskID), and a random id without
// a request id.
func TaskIDFor(principal, requestID string) string {
	return TaskIDIn(requestid.ForPrincipal(principal), requestID)
}

// TaskIDIn is TaskIDFor for a caller of a tenant: the same request id in
// two tenants makes two tasks.
func TaskIDIn(s requestid.Scope, requestID string) string {
	if requestID == "" {
		return event.RandomID()
	}
	return s.TaskID(requestID)
}

// scopeOf is the scope of principal's request ids: the tenant is the
// caller's, from its verified identity (rpc.Caller), never from a request.
func scopeOf(ctx context.Context, principal string) requestid.Scope {
	return requestid.For(rpc.Caller(ctx).Tenant, principal)
}

// use is a request id claimed for one command (see claimRequestID): the
// event id the command records under, derived from the caller and the
// request id so that a retry finds the event in the task's history (empty
// without a request id: a random one), and the claim it settles.
type use struct {
	id  string
	req *requestid.Request
}

// settle ends the use with the command's error (requestid.Request.Settle).
// It is called deferred, with the named error result.
func (u *use) settle(ctx context.Context, err *error) { u.req.Settle(ctx, err) }

// claimRequestID claims requestID for one command: its name (a
// requestid command), the task it acts on and the request as sent. A
// request id first used otherwise is AlreadyExists, and nothing is
// appended. The command ends with u.settle(ctx, &err): a command refused
// before it recorded anything (bad input, a state that forbids it) frees
// the id, so that the request, fixed, may use it; a retry of a command
// that was recorded finds its event.
func (p *Plane) claimRequestID(ctx context.Context, principal, command, taskID, requestID string, req proto.Message) (*use, error) {
	if requestID == "" {
		return &use{}, nil
	}
	_, history, err := p.tasks.Load(ctx, taskID)
	switch {
	case err != nil:
		return nil, err // a mistyped task id claims nothing
	case history.Has(requestid.LegacyEventID(taskID, requestID)):
		return p.olderUse(ctx, principal, command, taskID, requestID)
	}
	return p.claimRequestIDFor(ctx, principal, command, taskID, requestID, req)
}

// claimRequestIDFor claims requestID for a command whose record is not
// (only) its event on taskID: opts say what records it (the task a
// CreateTask opens, say; requestid.RecordedBy).
func (p *Plane) claimRequestIDFor(ctx context.Context, principal, command, taskID, requestID string, req proto.Message, opts ...requestid.Option) (*use, error) {
	r, err := requestid.Begin(ctx, p.tasks, scopeOf(ctx, principal), command, taskID, requestID, req, append(opts, requestid.Logger(p.logger))...)
	if err != nil {
		return nil, err
	}
	return &use{id: r.EventID(), req: r}, nil
}

// commandRecords says whether command records an event of type typ: what
// a retry across the upgrade must find under its old id.
func commandRecords(command, typ string) bool {
	types, ok := map[string][]string{
		requestid.PauseTask:      {event.TypeTaskPaused},
		requestid.ResumeTask:     {event.TypeTaskResumed},
		requestid.CancelTask:     {event.TypeTaskCancelled, event.TypeTaskCompensating},
		requestid.FailTask:       {event.TypeTaskFailed, event.TypeTaskCompensating},
		requestid.ReportUsage:    {event.TypeBudgetConsumed},
		requestid.RaiseBudget:    {event.TypeBudgetRaised},
		requestid.SubmitArtifact: {event.TypeArtifactSubmitted},
		requestid.MarkProduced:   {event.TypeTaskProduced},
		requestid.AcceptTask:     {event.TypeTaskAccepted},
		requestid.ReturnTask:     {event.TypeTaskReturned},
	}[command]
	return ok && slices.Contains(types, typ)
}

// unsure reports whether err leaves it open what was recorded: anything
// but "no such task".
func unsure(err error) bool { return err != nil && !errs.Is(err, errs.NotFound) }
