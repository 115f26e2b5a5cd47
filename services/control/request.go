package control

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/taskstore"
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

// use is a request id claimed for one command (see claim).
type use struct {
	// id is the event id the command records under: derived from the
	// caller and the request id, so that a retry finds the event in the
	// task's history; empty without a request id (a random one).
	id       string
	hold     *requestid.Hold
	recorded func(ctx context.Context) bool
	p        *Plane
}

// claim claims requestID for one command: the RPC's name, the task it acts
// on and the request as sent. A request id first used otherwise is
// AlreadyExists, and nothing is appended. The command ends with
// u.settle(ctx, &err): a command refused before it recorded anything (bad
// input, a state that forbids it) frees the id, so that the request, fixed,
// may use it; a retry of a command that was recorded finds its event.
func (p *Plane) claim(ctx context.Context, principal, command, taskID, requestID string, req proto.Message) (*use, error) {
	if requestID == "" {
		return &use{}, nil
	}
	_, history, err := taskstore.Load(ctx, p.log, taskID)
	switch {
	case errs.Is(err, errs.NotFound):
		return nil, err // a mistyped task id claims nothing
	case err != nil:
		return nil, err
	case history.Has(requestid.LegacyEventID(taskID, requestID)):
		// Recorded before request ids were the caller's own: a retry
		// across the upgrade, if this caller sent this command then.
		legacy := requestid.LegacyEventID(taskID, requestID)
		ev, err := p.commandEvent(ctx, taskID, legacy)
		if err != nil {
			return nil, err
		}
		if ev.GetActor().GetPrincipal() != principal || !commandRecords(command, ev.GetType()) {
			return nil, errs.New(errs.AlreadyExists, "request id %s was used on task %s before request ids were the caller's own, for %s by %s: use a new one",
				errs.Quote(requestID), taskID, ev.GetType(), ev.GetActor().GetPrincipal())
		}
		return &use{id: legacy}, nil
	}
	id := scopeOf(ctx, principal).EventID(taskID, command, requestID)
	return p.claimFor(ctx, principal, command, taskID, requestID, req, id, func(ctx context.Context) bool {
		_, h, err := taskstore.Load(ctx, p.log, taskID)
		return unsure(err) || (err == nil && h.Has(id))
	})
}

// claimFor claims requestID for a command whose record recorded reports
// (the task a CreateTask opens, say), under event id.
func (p *Plane) claimFor(ctx context.Context, principal, command, taskID, requestID string, req proto.Message, id string, recorded func(context.Context) bool) (*use, error) {
	if requestID == "" {
		return &use{}, nil
	}
	h, err := requestid.Claim(ctx, p.log, scopeOf(ctx, principal), requestID, requestid.UseOf(command, taskID, req))
	if err != nil {
		return nil, err
	}
	return &use{id: id, hold: h, recorded: recorded, p: p}, nil
}

// commandRecords says whether command records an event of type typ: what
// a retry across the upgrade must find under its old id.
func commandRecords(command, typ string) bool {
	types, ok := map[string][]string{
		"PauseTask":      {event.TypeTaskPaused},
		"ResumeTask":     {event.TypeTaskResumed},
		"CancelTask":     {event.TypeTaskCancelled, event.TypeTaskCompensating},
		"FailTask":       {event.TypeTaskFailed, event.TypeTaskCompensating},
		"ReportUsage":    {event.TypeBudgetConsumed},
		"RaiseBudget":    {event.TypeBudgetRaised},
		"SubmitArtifact": {event.TypeArtifactSubmitted},
		"MarkProduced":   {event.TypeTaskProduced},
		"AcceptTask":     {event.TypeTaskAccepted},
		"ReturnTask":     {event.TypeTaskReturned},
	}[command]
	return ok && slices.Contains(types, typ)
}

// unsure reports whether err leaves it open what was recorded: anything
// but "no such task".
func unsure(err error) bool { return err != nil && !errs.Is(err, errs.NotFound) }

// settle ends the use with the command's error: a refusal that recorded
// nothing frees the request id. It is called deferred, with the named
// error result.
func (u *use) settle(ctx context.Context, err *error) {
	if u.hold == nil {
		return
	}
	if *err == nil {
		if kerr := u.hold.Keep(context.WithoutCancel(ctx), u.p.log); kerr != nil {
			u.p.logger.WarnContext(ctx, "a retried command's request id may not be recorded", "event_id", u.id, "err", kerr)
		}
		return
	}
	if !requestid.Refused(*err) {
		return
	}
	// Whatever the caller's context says now, the id must not stay spent
	// by a command that did nothing.
	ctx = context.WithoutCancel(ctx)
	if u.recorded(ctx) {
		return
	}
	if rerr := u.hold.Release(ctx, u.p.log); rerr != nil && !errors.Is(rerr, context.Canceled) {
		u.p.logger.WarnContext(ctx, "a refused command's request id stays spent", "event_id", u.id, "err", rerr)
	}
}
