package control

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/schedule"
)

// Schedules (docs/schedules.md): each lives on a chain of its own
// (steward.schedule.<id>), written only by this plane. A command reads and
// folds the chain (pkg/schedule), dry-runs its event through the fold, and
// appends it conditionally on the chain's head, re-reading on a conflict.

// schedules is the plane's schedule commands and firing engine, a type of
// its own so that the plane stays one idea; it works through the plane's
// log, clock, timers and task commands, which it embeds.
type schedules struct {
	*Plane
	folds *chainCache[*stewardv1.Schedule] // chaincache.go
}

func newSchedules(p *Plane) *schedules {
	return &schedules{Plane: p, folds: newChainCache(func() *stewardv1.Schedule { return &stewardv1.Schedule{} }, p.log.ReadScheduleAfter,
		func(s *stewardv1.Schedule, r *stewardv1.EventRecord) error {
			return schedule.Apply(s, r.Event, r.Sequence)
		})}
}

// maxScheduleTries bounds a command's re-reads on conflicts.
const maxScheduleTries = 8

// loadedSchedule is a schedule as folded from its chain, and the chain's
// head, which the next append is conditional on.
type loadedSchedule struct {
	s    *stewardv1.Schedule
	head eventlog.Head
}

// loadSchedule folds schedule id, reading only what is new since its
// last fold; NotFound when it has no events.
func (p *schedules) loadSchedule(ctx context.Context, id string) (loadedSchedule, error) {
	s, head, err := p.folds.load(ctx, id, "schedule")
	return loadedSchedule{s: s, head: head}, err
}

// scheduleFor loads schedule id for the caller in ctx: another tenant's is
// not found.
func (p *schedules) scheduleFor(ctx context.Context, id string) (loadedSchedule, error) {
	if id == "" {
		return loadedSchedule{}, errs.Field("schedule_id", "is required")
	}
	l, err := p.loadSchedule(ctx, id)
	if err == nil && l.s.Tenant != rpc.Caller(ctx).Tenant {
		return loadedSchedule{}, errs.New(errs.NotFound, "schedule %s not found", errs.Quote(id))
	}
	return l, err
}

// CreateSchedule checks req and starts a schedule. With a request id it is
// idempotent: the schedule's id derives from the caller and the request id,
// so the same request again finds it (created false); the id used for a
// different schedule is AlreadyExists.
func (p *schedules) CreateSchedule(ctx context.Context, principal string, req *stewardv1.CreateScheduleRequest) (_ *stewardv1.Schedule, _ bool, err error) {
	now := p.now()
	created, first, err := p.checkSchedule(req, principal, now)
	if err != nil {
		return nil, false, err
	}
	created.Tenant = rpc.Caller(ctx).Tenant
	if err := p.checkTemplatePlan(ctx, principal, created.Tenant, created.Template.Contract, req.GetTemplate().GetPlan()); err != nil {
		return nil, false, err
	}
	created.Template.Plan = req.GetTemplate().GetPlan()
	id := "sch-" + event.RandomID()
	if req.RequestId != "" {
		// Claimed as every command's request id is: used first for
		// another command or another body, it is AlreadyExists.
		id = "sch-" + event.ID(requestid.CreateSchedule, created.Tenant, principal, req.RequestId)
		u, cerr := p.claimRequestIDFor(ctx, principal, requestid.CreateSchedule, id, req.RequestId, req, requestid.RecordedBy(p.scheduleExists(id)))
		if cerr != nil {
			return nil, false, cerr
		}
		defer u.settle(ctx, &err) // the named result: what CreateSchedule answers
	}
	ev, err := p.event(event.Meta{ID: event.ID(id, event.TypeScheduleCreated), TaskID: id, Actor: p.actor(principal), CorrelationID: req.RequestId, Time: now}, created)
	if err != nil {
		return nil, false, err
	}
	// The first firing's timer before the schedule: a timer whose
	// schedule was never recorded finds nothing and stops.
	if err := p.setFiringTimer(ctx, id, first); err != nil {
		return nil, false, err
	}
	rec, err := p.log.Append(ctx, eventlog.Head{}, ev)
	switch {
	case errors.Is(err, eventlog.ErrConflict): // a repeat: compare below
	case err != nil:
		return nil, false, err
	case rec.Event == ev:
		s, err := schedule.Fold([]*stewardv1.EventRecord{rec})
		if err != nil {
			return nil, false, err
		}
		return schedule.View(s), true, nil
	}
	l, err := p.loadSchedule(ctx, id)
	if err != nil {
		return nil, false, err
	}
	if l.s.Creator != principal || !sameSchedule(l.s, created) {
		return nil, false, errs.New(errs.AlreadyExists, "request_id %s already created schedule %s, differently", errs.Quote(req.RequestId), id)
	}
	return schedule.View(l.s), false, nil
}

// scheduleExists reports whether schedule id was created, or whether the
// log cannot say: what a CreateSchedule under a request id records.
func (p *schedules) scheduleExists(id string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		_, err := p.loadSchedule(ctx, id)
		return !errs.Is(err, errs.NotFound)
	}
}

// sameSchedule reports whether s was created as created would create it.
func sameSchedule(s *stewardv1.Schedule, created *stewardv1.ScheduleCreated) bool {
	return s.Tenant == created.Tenant && proto.Equal(s.Spec, created.Spec) && proto.Equal(s.Template, created.Template) &&
		proto.Equal(s.Overlap, created.Overlap) && proto.Equal(s.CatchUp, created.CatchUp)
}

// checkSchedule checks a CreateSchedule request made at now and returns
// the event that records it (without its tenant) and the first firing.
func (p *schedules) checkSchedule(req *stewardv1.CreateScheduleRequest, principal string, now time.Time) (*stewardv1.ScheduleCreated, time.Time, error) {
	if err := checkText("request_id", req.RequestId, MaxRequestID, false); err != nil {
		return nil, time.Time{}, err
	}
	spec, err := schedule.ParseSpec(req.Spec, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	first := spec.Next(now)
	if first.IsZero() {
		return nil, time.Time{}, errs.Field("spec", "never fires after now (%s)", now.UTC().Format(time.RFC3339))
	}
	if _, err := schedule.ParseRules(req.CatchUp, req.Overlap); err != nil {
		return nil, time.Time{}, err
	}
	contract, err := checkTemplate(req.Template, principal, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	return &stewardv1.ScheduleCreated{
		Spec: req.Spec, Template: &stewardv1.ScheduleTemplate{Contract: contract, RunsBudget: req.GetTemplate().GetRunsBudget()},
		Overlap: req.Overlap, CatchUp: req.CatchUp, RequestId: req.RequestId,
	}, first, nil
}

// checkTemplate checks a schedule's template as CreateTask checks a
// contract, naming fields under "template.", and returns its contract
// without fields this server does not know.
func checkTemplate(t *stewardv1.ScheduleTemplate, principal string, now time.Time) (*stewardv1.TaskContract, error) {
	if t.GetContract().GetDeadline() != nil {
		return nil, errs.Field("template.contract.deadline", "a schedule's runs recur: a fixed deadline would pass; give each run its time with the contract's timers")
	}
	if err := validateClientContract(t.GetContract(), now); err != nil {
		return nil, underTemplate(err)
	}
	contract, err := knownFieldsOnly(t.Contract)
	if err != nil {
		return nil, err
	}
	if err := checkDuties(contract, principal, ""); err != nil {
		return nil, underTemplate(err)
	}
	return contract, schedule.CheckRunsBudget(t)
}

// underTemplate names err's field as the template's.
func underTemplate(err error) error {
	var e *errs.Error
	if !errors.As(err, &e) || e.Field == "" {
		return err
	}
	moved := *e
	moved.Field = "template." + e.Field
	return &moved
}

// GetSchedule returns schedule id as the caller in ctx may see it.
func (p *schedules) GetSchedule(ctx context.Context, id string) (*stewardv1.Schedule, error) {
	l, err := p.scheduleFor(ctx, id)
	if err != nil {
		return nil, err
	}
	return schedule.View(l.s), nil
}

// ListSchedules returns a page of the caller's tenant's schedules, in id
// order, after the page token (the last id of the page before).
func (p *schedules) ListSchedules(ctx context.Context, req *stewardv1.ListSchedulesRequest) ([]*stewardv1.Schedule, string, error) {
	size := int(req.PageSize)
	switch {
	case size < 0 || size > 1000:
		return nil, "", errs.Field("page_size", "%d is not from 0 to 1000", size)
	case size == 0:
		size = 100
	}
	if req.PageToken != "" && !eventlog.ValidTaskID(req.PageToken) {
		return nil, "", errs.Field("page_token", "is not a token ListSchedules gave")
	}
	ids, err := p.log.ChainIDs(ctx, event.TypeScheduleCreated)
	if err != nil {
		return nil, "", err
	}
	tenant := rpc.Caller(ctx).Tenant
	var page []*stewardv1.Schedule
	for _, id := range ids {
		if id <= req.PageToken {
			continue
		}
		if len(page) == size {
			return page, page[size-1].ScheduleId, nil
		}
		l, err := p.loadSchedule(ctx, id)
		if err != nil {
			return nil, "", err
		}
		if l.s.Tenant == tenant {
			page = append(page, schedule.View(l.s))
		}
	}
	return page, "", nil
}

// steerSchedule records payload, a pause, resumption or deletion with
// reason, on schedule id for principal: its creator or an operator.
func (p *schedules) steerSchedule(ctx context.Context, principal, id, reason string, payload event.Payload) (*stewardv1.Schedule, error) {
	if err := checkText("reason", reason, MaxReasonLen, false); err != nil {
		return nil, err
	}
	for range maxScheduleTries {
		l, err := p.scheduleFor(ctx, id)
		if err != nil {
			return nil, err
		}
		if principal != l.s.Creator && !rpc.Caller(ctx).HasRole(access.Operator) {
			return nil, errs.New(errs.PermissionDenied, "%s may not steer schedule %s: only its creator or an operator", errs.Quote(principal), id)
		}
		ev, err := p.event(event.Meta{TaskID: id, Actor: p.actor(principal)}, payload)
		if err != nil {
			return nil, err
		}
		s := proto.CloneOf(l.s)
		if err := schedule.Apply(s, ev, l.head.Sequence+1); err != nil {
			return nil, err
		}
		if ev.GetScheduleResumed() != nil {
			if err := p.setFiringTimer(ctx, id, schedule.Next(s)); err != nil {
				return nil, err
			}
		}
		rec, err := p.log.Append(ctx, l.head, ev)
		if errors.Is(err, eventlog.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.LastSequence = rec.Sequence
		return schedule.View(s), nil
	}
	return nil, errs.New(errs.Conflict, "schedule %s kept changing; try again", id)
}
