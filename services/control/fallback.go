package control

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// Declared tool fallbacks (docs/fallbacks.md). Their triggers are checked
// when a proposal names the primary: the proposal's task is read then
// anyway, and no timer is needed for the way back, which is "the next
// proposal after the stated duration tries the primary again".

const (
	toolFallback  = stewardv1.FallbackKind_FALLBACK_KIND_TOOL
	modelFallback = stewardv1.FallbackKind_FALLBACK_KIND_MODEL
)

// fallbacks checks the triggers of a plane's tasks' tool fallbacks.
type fallbacks struct{ *Plane }

// steer engages or clears the contract's fallback for tool, as its
// trigger says, before a proposal naming tool is drafted, and returns the
// task as it then is. The breaker's state is read before the conditional
// append; the append is decided again on the task each try reads, with an
// id naming the engagement, so that two replicas engage once.
func (p fallbacks) steer(ctx context.Context, t *stewardv1.Task, tool string) (*stewardv1.Task, error) {
	f := task.FallbackFor(t.Contract, toolFallback, tool)
	if f == nil {
		return t, nil
	}
	var breaker *stewardv1.BreakerChanged
	if f.GetTrigger().GetBreakerOpen() {
		var err error
		if breaker, err = p.breakerOf(ctx, t, f.Primary); err != nil {
			return nil, err
		}
	}
	now := p.now()
	taskID := t.Contract.GetTaskId()
	return p.apply(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if !task.Active(t.Status) {
			return nil, nil
		}
		engage, evidence := fallbackChange(t, f, now, breaker)
		if evidence == nil {
			return nil, nil
		}
		// The count of engagements so far names this one, or its clearing.
		meta := event.Meta{TaskID: taskID, Actor: p.actor(stewardPrincipal)}
		n := strconv.Itoa(len(t.FallbackEngagements))
		if engage {
			meta.ID = event.ID(taskID, event.TypeFallbackEngaged, f.Id, n)
			return p.event(meta, &stewardv1.FallbackEngaged{FallbackId: f.Id, Evidence: evidence})
		}
		meta.ID = event.ID(taskID, event.TypeFallbackCleared, f.Id, n)
		return p.event(meta, &stewardv1.FallbackCleared{FallbackId: f.Id, Evidence: evidence})
	})
}

// fallbackChange says whether f should engage (true) or clear (false) on t
// at now, and why; nil evidence for neither. breaker is the last change of
// the primary's breaker, for a breaker trigger (nil: none recorded).
func fallbackChange(t *stewardv1.Task, f *stewardv1.Fallback, now time.Time, breaker *stewardv1.BreakerChanged) (bool, *stewardv1.FallbackEvidence) {
	trig := f.GetTrigger()
	open := breaker.GetTo() == stewardv1.BreakerState_BREAKER_STATE_OPEN
	if e := task.Engaged(t, f.Id); e != nil {
		switch {
		case trig.GetBreakerOpen() && !open:
			return false, &stewardv1.FallbackEvidence{Trigger: "breaker_closed", ServiceKey: breaker.GetServiceKey()}
		case !trig.GetBreakerOpen() && !now.Before(e.EngagedAt.AsTime().Add(f.RetryPrimaryAfter.AsDuration())):
			return false, &stewardv1.FallbackEvidence{Trigger: "retry_after"}
		}
		return false, nil
	}
	if trig.GetBreakerOpen() {
		if open {
			return true, &stewardv1.FallbackEvidence{Trigger: "breaker", ServiceKey: breaker.GetServiceKey()}
		}
		return false, nil
	}
	a := lastPrimaryOutcome(t, f.Primary)
	if a == nil || evidenceUsed(t, f.Id, a.ActionId) {
		return false, nil // no new evidence since the fallback last cleared
	}
	o := a.Outcome
	if o.Status == stewardv1.ActionStatus_ACTION_STATUS_FAILED && slices.Contains(trig.GetFailureClasses(), o.FailureClass) {
		return true, &stewardv1.FallbackEvidence{Trigger: "failure_class", ActionId: a.ActionId, FailureClass: o.FailureClass}
	}
	if max := trig.GetLatencyOver(); max != nil && a.FirstDispatchedAt != nil && o.FinishedAt != nil {
		if took := o.FinishedAt.AsTime().Sub(a.FirstDispatchedAt.AsTime()); took > max.AsDuration() {
			return true, &stewardv1.FallbackEvidence{Trigger: "latency", ActionId: a.ActionId, Latency: durationpb.New(took)}
		}
	}
	return false, nil
}

// lastPrimaryOutcome is the latest action of tool on t, not drafted
// against a fallback, whose call has ended (succeeded or failed).
func lastPrimaryOutcome(t *stewardv1.Task, tool string) *stewardv1.Action {
	for _, a := range slices.Backward(t.Actions) {
		if a.Tool != tool || a.FallbackId != "" || a.Outcome == nil {
			continue
		}
		switch a.Outcome.Status {
		case stewardv1.ActionStatus_ACTION_STATUS_FAILED, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
			return a
		}
	}
	return nil
}

// evidenceUsed reports whether action id already engaged fallback id once:
// a failure seen before the fallback cleared does not engage it again.
func evidenceUsed(t *stewardv1.Task, id, actionID string) bool {
	for _, e := range t.FallbackEngagements {
		if e.FallbackId == id && e.EngagedBy.GetActionId() == actionID {
			return true
		}
	}
	return false
}

// breakerOf reads the last change of the breaker of tool's service, as the
// execution plane recorded it on the service's subject: planes meet only on
// the log.
func (p fallbacks) breakerOf(ctx context.Context, t *stewardv1.Task, tool string) (*stewardv1.BreakerChanged, error) {
	entry, _, err := p.toolFor(ctx, t, tool, "")
	if err != nil {
		return nil, err
	}
	key := entry.Tool.Contract.GetServiceKey()
	if key == "" {
		key = entry.Tool.Contract.GetName()
	}
	_, last, err := p.log.ServiceHead(ctx, entry.Tool.Tenant, key)
	return last.GetBreakerChanged(), err
}

// redirect points pr at the fallback's tool while the contract's fallback
// for the tool it names is engaged, and returns that fallback (nil for
// none), for a proposal that may fall back (proposal.fallBack).
func redirect(t *stewardv1.Task, pr *proposal) *stewardv1.Fallback {
	if !pr.fallBack {
		return nil
	}
	tool, f := fallbackTool(t, pr.tool)
	if f != nil {
		pr.tool, pr.toolVersion = tool, "" // a version named was the primary's
	}
	return f
}

// engagedNote tells a proposer whose params do not fit why they were
// checked against another tool's schema.
func engagedNote(f *stewardv1.Fallback) string {
	if f == nil {
		return ""
	}
	return fmt.Sprintf(" (fallback %s is engaged: the proposal runs on tool %s in place of %s, under its schema)", errs.Quote(f.Id), errs.Quote(f.Fallback), errs.Quote(f.Primary))
}

// fallbackTool is the tool a proposal naming tool is drafted against on t:
// the fallback's while the contract's fallback for tool is engaged, with
// that fallback; else tool itself and nil.
func fallbackTool(t *stewardv1.Task, tool string) (string, *stewardv1.Fallback) {
	f := task.FallbackFor(t.GetContract(), toolFallback, tool)
	if f == nil || task.Engaged(t, f.Id) == nil {
		return tool, nil
	}
	return f.Fallback, f
}

// asRecorded drafts pr again the way existing, the action its first try
// recorded, was drafted — on the primary, or on the fallback it stood in
// under — whatever the fallback's state is now: a client's repeat of a
// proposal is the same action. d is kept when that cannot be done.
func (p fallbacks) asRecorded(ctx context.Context, t *stewardv1.Task, pr proposal, existing *stewardv1.Action, d *draft) *draft {
	pr.fallBack = false
	f := task.FindFallback(t.GetContract(), existing.FallbackId)
	if existing.FallbackId != "" {
		if f == nil {
			return d
		}
		pr.tool = f.Fallback
	}
	again, err := p.prepare(ctx, t, pr)
	if err != nil {
		return d
	}
	again.action.FallbackOf, again.action.FallbackId = f.GetPrimary(), f.GetId()
	return again
}
