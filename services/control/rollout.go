package control

import (
	"context"
	"errors"
	"slices"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rollout"
	"github.com/steward-run/steward/pkg/rpc"
)

// Rollouts (docs/rollouts.md): each lives on a chain of its own
// (steward.rollout.<id>), written only by this plane. A change reads and
// folds the chain (pkg/rollout), builds its event from the fold, without
// side effects, and appends it conditionally on the chain's head,
// re-reading on a conflict: two control planes widen or roll back once.

// rollouts is the plane's rollout commands, judge and resolution, a type
// of its own so that the plane stays one idea; it works through the
// plane's log, clock and tool registry, which it embeds.
type rollouts struct {
	*Plane
	index *rolloutIndex                   // rollout_index.go
	folds *chainCache[*stewardv1.Rollout] // chaincache.go
}

func newRollouts(p *Plane) *rollouts {
	return &rollouts{Plane: p, index: newRolloutIndex(), folds: newChainCache(func() *stewardv1.Rollout { return &stewardv1.Rollout{} }, p.log.ReadRolloutAfter,
		func(r *stewardv1.Rollout, rec *stewardv1.EventRecord) error { return rollout.Apply(r, rec.Event) })}
}

// loadedRollout is a rollout as folded from its chain, and the chain's
// head, which the next append is conditional on; recent are its events
// stored after the sequence the change asked for, if it did.
type loadedRollout struct {
	r      *stewardv1.Rollout
	head   eventlog.Head
	recent []*stewardv1.EventRecord
}

// has reports whether the recent events hold the event of id.
func (l loadedRollout) has(id string) bool {
	return slices.ContainsFunc(l.recent, func(r *stewardv1.EventRecord) bool { return r.Event.EventId == id })
}

// loadRollout folds rollout id, reading only what is new since its last
// fold; NotFound when it has no events.
func (p *rollouts) loadRollout(ctx context.Context, id string) (loadedRollout, error) {
	r, head, err := p.folds.load(ctx, id, "rollout")
	return loadedRollout{r: r, head: head}, err
}

// GetRollout returns rollout id of the caller's tenant; another tenant's
// is not found.
func (p *rollouts) GetRollout(ctx context.Context, id string) (*stewardv1.Rollout, error) {
	if id == "" {
		return nil, errs.Field("rollout_id", "is required")
	}
	l, err := p.loadRollout(ctx, id)
	if err == nil && l.r.Tenant != rpc.Caller(ctx).Tenant {
		return nil, errs.New(errs.NotFound, "rollout %s not found", errs.Quote(id))
	}
	return l.r, err
}

// ListRollouts returns the caller's tenant's rollouts, newest first.
func (p *rollouts) ListRollouts(ctx context.Context) ([]*stewardv1.Rollout, error) {
	rs, err := p.tenantRollouts(ctx, rpc.Caller(ctx).Tenant, "")
	slices.Reverse(rs)
	return rs, err
}

// StartRollout checks spec — both versions registered as the caller's
// tenant sees the tool, no other rollout of it ramping — and starts it.
func (p *rollouts) StartRollout(ctx context.Context, principal string, spec *stewardv1.RolloutSpec) (*stewardv1.Rollout, error) {
	if err := rollout.CheckSpec(spec); err != nil {
		return nil, err
	}
	tenant := rpc.Caller(ctx).Tenant
	for field, v := range map[string]string{"spec.candidate_version": spec.CandidateVersion, "spec.stable_version": spec.StableVersion} {
		if _, err := p.tools.Lookup(ctx, p.log, tenant, spec.Tool, v); errs.Is(err, errs.NotFound) {
			return nil, errs.Field(field, "%s", err.Error())
		} else if err != nil {
			return nil, err
		}
	}
	rs, err := p.tenantRollouts(ctx, tenant, spec.Tool)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.State == stewardv1.RolloutState_ROLLOUT_STATE_RAMPING {
			return nil, errs.New(errs.FailedPrecondition, "rollout %s of tool %s is ramping; roll it back first", r.RolloutId, errs.Quote(spec.Tool))
		}
	}
	id := nextRolloutID(tenant, spec.Tool, len(rs))
	ev, err := p.event(event.Meta{ID: event.ID(id, event.TypeRolloutStarted), TaskID: id, Actor: p.actor(principal)},
		&stewardv1.RolloutStarted{Tenant: tenant, Spec: spec})
	if err != nil {
		return nil, err
	}
	rec, err := p.log.Append(ctx, eventlog.Head{}, ev)
	if errors.Is(err, eventlog.ErrConflict) || err == nil && rec.Event != ev {
		// Another start of the tool got there first (the same id).
		return nil, errs.New(errs.FailedPrecondition, "rollout %s of tool %s started at the same time; roll it back first", id, errs.Quote(spec.Tool))
	}
	if err != nil {
		return nil, err
	}
	return rollout.Fold([]*stewardv1.EventRecord{rec})
}

// RollBackRollout rolls rollout id back by hand.
func (p *rollouts) RollBackRollout(ctx context.Context, principal, id, reason string) (*stewardv1.Rollout, error) {
	if _, err := p.GetRollout(ctx, id); err != nil {
		return nil, err
	}
	switch {
	case reason == "":
		return nil, errs.Field("reason", "is required: say why the rollout is rolled back")
	case len(reason) > 1024:
		return nil, errs.Field("reason", "is longer than 1,024 bytes")
	}
	return p.changeRollout(ctx, id, principal, 0, func(l loadedRollout) (string, event.Payload, error) {
		if l.r.State != stewardv1.RolloutState_ROLLOUT_STATE_RAMPING {
			return "", nil, errs.New(errs.FailedPrecondition, "rollout %s is %s already", id, l.r.State)
		}
		return event.ID(id, event.TypeRolloutRolledBack), &stewardv1.RolloutRolledBack{Reason: reason, Figures: l.r.Figures, ByHand: true}, nil
	})
}

// changeRollout appends what build makes of rollout id's fold (nothing
// for a nil payload), conditionally on the chain's head, and returns the
// rollout as it then is; with since > 0, build sees the chain's events
// stored after since as well (loadedRollout.recent). build is pure: it
// runs again on a conflict.
func (p *rollouts) changeRollout(ctx context.Context, id, principal string, since uint64, build func(loadedRollout) (string, event.Payload, error)) (*stewardv1.Rollout, error) {
	for range maxScheduleTries {
		l, err := p.loadRollout(ctx, id)
		if err == nil && since > 0 {
			l.recent, err = p.log.ReadRolloutAfter(ctx, id, since)
		}
		if err != nil {
			return nil, err
		}
		evID, payload, err := build(l)
		if err != nil || payload == nil {
			return l.r, err
		}
		ev, err := p.event(event.Meta{ID: evID, TaskID: id, Actor: p.actor(principal)}, payload)
		if err != nil {
			return nil, err
		}
		rec, err := p.log.Append(ctx, l.head, ev)
		if errors.Is(err, eventlog.ErrConflict) {
			continue // another plane moved the rollout: judge it again
		}
		if err != nil {
			return nil, err
		}
		if err := rollout.Apply(l.r, rec.Event); err != nil {
			return nil, err
		}
		return l.r, nil
	}
	return nil, errs.New(errs.Unavailable, "rollout %s changed %d times under this change; try again", id, maxScheduleTries)
}
