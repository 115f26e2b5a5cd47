package control

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/objective"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
)

// maxObjectiveTries bounds how often a write to an objective's chain is
// tried again after another writer moved it on: each try re-reads the
// chain, so a busy objective costs a few reads, never a livelock.
const maxObjectiveTries = 8

// objectives are the plane's commands on objectives, and the check and
// reservation of a task that names one.
type objectives struct {
	*Plane
	cache *objectiveCache
}

// Create opens an objective (CreateObjective) on its own chain. With a request id
// it is idempotent as CreateTask is: the objective's id derives from the
// caller and the request id (requestid.Scope.ObjectiveID), the same
// request again returns it with created false, and the id used with
// another body is AlreadyExists.
func (p objectives) Create(ctx context.Context, principal string, req *stewardv1.CreateObjectiveRequest) (_ *stewardv1.Objective, _ bool, err error) {
	if err := validateObjective(req); err != nil {
		return nil, false, err
	}
	s := scopeOf(ctx, principal)
	id := event.RandomID()
	if req.RequestId != "" {
		id = s.ObjectiveID(req.RequestId)
		r, cerr := requestid.Begin(ctx, p.tasks, s, requestid.CreateObjective, id, req.RequestId, req,
			requestid.RecordedBy(p.exists(id)), requestid.Logger(p.logger))
		if cerr != nil {
			return nil, false, cerr
		}
		defer r.Settle(ctx, &err)
	}
	owner := req.OwnerRef
	if owner == "" {
		owner = principal
	}
	o := &stewardv1.Objective{ObjectiveId: id, Tenant: rpc.Caller(ctx).Tenant, OwnerRef: owner, Intent: req.Intent,
		DesiredOutcome: req.DesiredOutcome, Budget: req.Budget, RequestId: req.RequestId}
	ev, err := p.event(event.Meta{ID: event.ID(id, event.TypeObjectiveCreated), TaskID: id, Actor: p.actor(principal), CorrelationID: req.RequestId},
		&stewardv1.ObjectiveCreated{Objective: o})
	if err != nil {
		return nil, false, err
	}
	rec, err := p.log.Append(ctx, eventlog.Head{}, ev)
	switch {
	case errors.Is(err, eventlog.ErrConflict):
		// Made already: a retry of the same request, or the id is taken.
	case err != nil:
		return nil, false, err
	case rec.Event == ev:
		made, err := objective.Fold([]*stewardv1.EventRecord{rec})
		return made, true, err
	}
	recs, err := p.log.ReadObjective(ctx, id)
	if err != nil {
		return nil, false, err
	}
	if len(recs) == 0 || !proto.Equal(recs[0].Event.GetObjectiveCreated().GetObjective(), o) {
		return nil, false, errs.New(errs.AlreadyExists, "request_id %s already created objective %s otherwise", errs.Quote(req.RequestId), id)
	}
	made, err := objective.Fold(recs)
	return made, false, err
}

// exists reports whether objective id has been created, or
// whether it cannot tell: what a CreateObjective under a request id
// records.
func (p objectives) exists(id string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		recs, err := p.log.ReadObjective(ctx, id)
		return err != nil || len(recs) > 0
	}
}

// validateObjective checks a CreateObjective request and names the first
// field that is wrong.
func validateObjective(req *stewardv1.CreateObjectiveRequest) error {
	checks := []error{
		checkText("request_id", req.RequestId, MaxRequestID, false),
		checkText("owner_ref", req.OwnerRef, MaxRefLen, false),
		checkText("intent", req.Intent, MaxTextLen, true),
		checkText("desired_outcome", req.DesiredOutcome, MaxTextLen, false),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	switch b := req.Budget; {
	case b.GetMaxTokens() < 0:
		return errs.Field("budget.max_tokens", "must not be negative")
	case b.GetMaxCostMicros() < 0:
		return errs.Field("budget.max_cost_micros", "must not be negative")
	case (b.GetMaxCostMicros() > 0 || b.GetCurrency() != "") && len(b.GetCurrency()) != 3:
		return errs.Field("budget.currency", "must be a three-letter ISO 4217 code")
	}
	return nil
}

// Close ends an objective (CloseObjective), done or abandoned, with a reason: its
// owner or an operator. The same close again (status and reason) answers
// the objective as it is; any other close of a closed one is
// FailedPrecondition.
func (p objectives) Close(ctx context.Context, principal string, req *stewardv1.CloseObjectiveRequest) (*stewardv1.Objective, error) {
	if err := validateClose(req); err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		o, err := p.load(ctx, "objective_id", req.ObjectiveId)
		if err != nil {
			return nil, err
		}
		if err := mayAnswerFor(ctx, principal, o, "objective_id"); err != nil {
			return nil, err
		}
		if objective.Closed(o.Status) && o.Status == req.Status && o.CloseReason == req.Reason {
			return o, nil // a retry
		}
		ev, err := p.event(event.Meta{ID: event.ID(o.ObjectiveId, event.TypeObjectiveClosed), TaskID: o.ObjectiveId, Actor: p.actor(principal)},
			&stewardv1.ObjectiveClosed{Status: req.Status, Reason: req.Reason})
		if err != nil {
			return nil, err
		}
		// The fold says whether it may close, before anything is written.
		if err := objective.Apply(proto.CloneOf(o), ev, 0); err != nil {
			return nil, err
		}
		rec, err := p.log.Append(ctx, eventlog.Head{Sequence: o.LastSequence, Hash: o.LastHash}, ev)
		if errors.Is(err, eventlog.ErrConflict) && try < maxObjectiveTries {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := objective.Apply(o, rec.Event, rec.Sequence); err != nil {
			return nil, err
		}
		return o, nil
	}
}

func validateClose(req *stewardv1.CloseObjectiveRequest) error {
	switch {
	case req.ObjectiveId == "":
		return errs.Field("objective_id", "is required")
	case !eventlog.ValidTaskID(req.ObjectiveId):
		return errs.Field("objective_id", "%s is not an objective id: "+eventlog.TaskIDRule, errs.Quote(req.ObjectiveId))
	case !objective.Closed(req.Status):
		return errs.Field("status", "must be OBJECTIVE_STATUS_DONE or OBJECTIVE_STATUS_ABANDONED")
	}
	return checkText("reason", req.Reason, MaxReasonLen, true)
}

// load folds objective id from the log (its cache), as the caller's tenant
// sees it: one of another tenant's, or none, is NotFound naming field,
// in the same words, so that the answer tells another tenant nothing.
func (p objectives) load(ctx context.Context, field, id string) (*stewardv1.Objective, error) {
	o, err := p.cache.fold(ctx, id)
	if err != nil {
		return nil, err
	}
	if o == nil || o.Tenant != rpc.Caller(ctx).Tenant {
		return nil, &errs.Error{Code: errs.NotFound, Field: field, Message: "objective " + id + " not found"}
	}
	return o, nil
}

// mayAnswerFor refuses a caller who is neither the objective's owner nor,
// with tokens, an operator: only they close it or name it from a task.
func mayAnswerFor(ctx context.Context, principal string, o *stewardv1.Objective, field string) error {
	who := rpc.Caller(ctx)
	if principal == o.OwnerRef || (who.Verified && who.HasRole(access.Operator)) {
		return nil
	}
	return &errs.Error{Code: errs.PermissionDenied, Field: field,
		Message: principal + " is neither the owner of objective " + o.ObjectiveId + " (" + o.OwnerRef + ") nor an operator"}
}

func (s *taskService) CreateObjective(ctx context.Context, req *connect.Request[stewardv1.CreateObjectiveRequest]) (*connect.Response[stewardv1.CreateObjectiveResponse], error) {
	o, created, err := s.plane.objectives.Create(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.CreateObjectiveResponse{Objective: o, Created: created}), nil
}

func (s *taskService) CloseObjective(ctx context.Context, req *connect.Request[stewardv1.CloseObjectiveRequest]) (*connect.Response[stewardv1.CloseObjectiveResponse], error) {
	o, err := s.plane.objectives.Close(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.CloseObjectiveResponse{Objective: o}), nil
}
