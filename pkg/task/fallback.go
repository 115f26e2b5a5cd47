package task

import (
	"slices"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"google.golang.org/protobuf/proto"
)

// Declared fallbacks (docs/fallbacks.md): the fold keeps each engagement
// of one, the actions and decisions made under it, and the model changes
// no fallback declares.

// FindFallback returns the contract's fallback id, or nil.
func FindFallback(c *stewardv1.TaskContract, id string) *stewardv1.Fallback {
	for _, f := range c.GetFallbacks() {
		if f.Id == id {
			return f
		}
	}
	return nil
}

// FallbackFor returns the contract's fallback of kind for primary, or nil:
// a contract declares at most one per primary.
func FallbackFor(c *stewardv1.TaskContract, kind stewardv1.FallbackKind, primary string) *stewardv1.Fallback {
	for _, f := range c.GetFallbacks() {
		if f.Kind == kind && f.Primary == primary {
			return f
		}
	}
	return nil
}

// Engaged returns the open engagement of fallback id on t, or nil.
func Engaged(t *stewardv1.Task, id string) *stewardv1.FallbackEngagement {
	for _, e := range slices.Backward(t.FallbackEngagements) {
		if e.FallbackId == id {
			if e.ClearedAt == nil {
				return e
			}
			return nil
		}
	}
	return nil
}

// UnderFallback reports whether work on t so far ran under a fallback: one
// is engaged, an action drafted under one was sent to its tool, or a
// decision was made under one.
func UnderFallback(t *stewardv1.Task) bool {
	for _, e := range t.FallbackEngagements {
		if e.ClearedAt == nil || len(e.DecisionIds) > 0 || slices.ContainsFunc(e.ActionIds, func(id string) bool { return ran(FindAction(t, id)) }) {
			return true
		}
	}
	return false
}

// ran reports whether a was sent to its tool at least once: one denied,
// rejected or withdrawn before it ran shaped nothing.
func ran(a *stewardv1.Action) bool {
	return a != nil && (a.FirstDispatchedAt != nil || a.Outcome != nil)
}

// fallbackStep checks a fallback engaging or clearing against t: the
// fallback is the contract's, and engaged only when it is not, cleared
// only when it is.
func fallbackStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_FallbackEngaged:
		f := FindFallback(t.Contract, p.FallbackEngaged.FallbackId)
		switch {
		case Terminal(t.Status):
			return nil, true, illegal(t, "engage a fallback of")
		case f == nil:
			return nil, true, errs.Field("fallback_id", "%s is not one of the contract's fallbacks", errs.Quote(p.FallbackEngaged.FallbackId))
		case Engaged(t, f.Id) != nil:
			return nil, true, errs.New(errs.FailedPrecondition, "task %s: fallback %s is engaged already", t.Contract.GetTaskId(), errs.Quote(f.Id))
		}
		return func() {
			t.FallbackEngagements = append(slices.Clip(t.FallbackEngagements), &stewardv1.FallbackEngagement{
				FallbackId: f.Id, Kind: f.Kind, Primary: f.Primary, Fallback: f.Fallback,
				EngagedBy: p.FallbackEngaged.Evidence, EngagedAt: ev.Time,
				// A model fallback engages on the decision that showed it.
				DecisionIds: nonEmpty(p.FallbackEngaged.Evidence.GetDecisionId()),
			})
		}, true, nil
	case *stewardv1.Event_FallbackCleared:
		id := p.FallbackCleared.FallbackId
		if Engaged(t, id) == nil {
			return nil, true, errs.New(errs.FailedPrecondition, "task %s: fallback %s is not engaged", t.Contract.GetTaskId(), errs.Quote(id))
		}
		return func() {
			changeEngagement(t, id, func(e *stewardv1.FallbackEngagement) {
				e.ClearedBy, e.ClearedAt = p.FallbackCleared.Evidence, ev.Time
			})
		}, true, nil
	}
	return nil, false, nil
}

// changeEngagement applies change to a copy of fallback id's open
// engagement: views handed out earlier may share the old one.
func changeEngagement(t *stewardv1.Task, id string, change func(*stewardv1.FallbackEngagement)) {
	out := slices.Clone(t.FallbackEngagements)
	for i, e := range slices.Backward(out) {
		if e.FallbackId == id && e.ClearedAt == nil {
			e = proto.CloneOf(e)
			change(e)
			out[i] = e
			break
		}
	}
	t.FallbackEngagements = out
}

// noteFallback records, after ev is folded, what ran under a fallback:
// an action drafted against one, a decision by a fallback model, a model
// change no fallback declares, and whether a result was produced under one.
func noteFallback(t *stewardv1.Task, ev *stewardv1.Event) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ActionProposed:
		if a := p.ActionProposed.GetAction(); a.GetFallbackId() != "" && Engaged(t, a.FallbackId) != nil {
			changeEngagement(t, a.FallbackId, func(e *stewardv1.FallbackEngagement) { e.ActionIds = append(e.ActionIds, a.ActionId) })
		}
	case *stewardv1.Event_DecisionRecorded:
		noteModel(t, p.DecisionRecorded.GetDecision())
	case *stewardv1.Event_TaskProduced:
		t.ProducedUnderFallback = p.TaskProduced.UnderFallback || UnderFallback(t)
	}
}

// noteModel compares d's model with the one before it: a decision of an
// engaged model fallback is made under it; a change no fallback declares is
// an undeclared swap.
func noteModel(t *stewardv1.Task, d *stewardv1.Decision) {
	model := d.GetCall().GetModelId()
	for _, f := range t.Contract.GetFallbacks() {
		if f.Kind == stewardv1.FallbackKind_FALLBACK_KIND_MODEL && f.Fallback == model && Engaged(t, f.Id) != nil {
			changeEngagement(t, f.Id, func(e *stewardv1.FallbackEngagement) { e.DecisionIds = append(e.DecisionIds, d.DecisionId) })
		}
	}
	prev := PreviousModelDecision(t, d.DecisionId)
	if prev == nil || model == "" || prev.Call.ModelId == model || declaredSwap(t.Contract, prev.Call.ModelId, model) {
		return
	}
	t.UndeclaredModelSwaps = append(slices.Clip(t.UndeclaredModelSwaps), &stewardv1.UndeclaredModelSwap{
		FromModel: prev.Call.ModelId, ToModel: model, FromDecisionId: prev.DecisionId, ToDecisionId: d.DecisionId,
	})
}

// PreviousModelDecision is the latest decision on t before id that names
// a model, or nil.
func PreviousModelDecision(t *stewardv1.Task, id string) *stewardv1.Decision {
	seen := false
	for _, d := range slices.Backward(t.Decisions) {
		if d.DecisionId == id {
			seen = true
			continue
		}
		if seen && d.GetCall().GetModelId() != "" {
			return d
		}
	}
	return nil
}

// declaredSwap reports whether a model fallback declares the change from
// one model to the other, either way (engaging or going back).
func declaredSwap(c *stewardv1.TaskContract, from, to string) bool {
	for _, f := range c.GetFallbacks() {
		if f.Kind == stewardv1.FallbackKind_FALLBACK_KIND_MODEL &&
			(f.Primary == from && f.Fallback == to || f.Primary == to && f.Fallback == from) {
			return true
		}
	}
	return false
}

func nonEmpty(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}
