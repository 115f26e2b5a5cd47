package task

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Decisions and the context ledger (docs/decisions.md): the model
// decisions behind a task's actions, and the context items they drew on.
// A decision is a fact about the past, recorded once under its id; the
// flags on it were found by the control plane when it was recorded, from
// the ledger as it stood, and DecisionFlags finds them again for anyone
// replaying the log.

// MaxContextItems caps a task's context ledger: every item is on the
// task's view, which is one answer.
const MaxContextItems = 1000

// AnyProvider in a context item's egress list lets it go to any model.
const AnyProvider = "*"

// AtDecisionCap reports whether t has recorded as many decisions as its
// loop cap allows: the action cap in force (MaxActions), counted apart.
// A model that keeps deciding is the same loop as an agent that keeps
// proposing, and is stopped the same way. An observed decision is not
// held to it: its call was an action, held to the action cap. A fork's
// carried decisions are its parent's, and do not count.
func AtDecisionCap(t *stewardv1.Task) bool {
	n := 0
	for _, d := range t.Decisions {
		if !d.Carried {
			n++
		}
	}
	return n >= MaxActions(t)
}

// decisionStep checks a decision or a context item against t and returns
// the change to make; ok is false for other events.
func decisionStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_DecisionRecorded:
		commit, err := recordDecision(t, ev, p.DecisionRecorded.GetDecision())
		return commit, true, err
	case *stewardv1.Event_ContextAttached:
		commit, err := attachContext(t, ev, p.ContextAttached.GetItem())
		return commit, true, err
	}
	return nil, false, nil
}

func recordDecision(t *stewardv1.Task, ev *stewardv1.Event, d *stewardv1.Decision) (func(), error) {
	id := t.Contract.GetTaskId()
	switch {
	case Terminal(t.Status):
		return nil, illegal(t, "record a decision for")
	case d.GetDecisionId() == "":
		return nil, errs.Field("decision.decision_id", "is required")
	case FindDecision(t, d.DecisionId) != nil:
		return nil, errs.New(errs.AlreadyExists, "task %s already recorded decision %s", id, errs.Quote(d.DecisionId))
	case AtDecisionCap(t) && d.GetCall().GetProvenance() != stewardv1.Provenance_PROVENANCE_OBSERVED:
		return nil, errs.New(errs.FailedPrecondition, "task %s recorded %d decisions, its loop cap (contract.limits.max_actions)", id, len(t.Decisions))
	case d.GetMilestoneId() != "" && len(t.Contract.GetMilestones()) > 0 && !KnownMilestone(t.Contract, d.MilestoneId):
		// Declared milestones hold every tag; budget lines alone, only
		// what is charged (below).
		return nil, unknownMilestone(t, "decision.milestone_id", d.MilestoneId)
	case MilestoneAtCap(t, d.GetMilestoneId()) && d.GetCall().GetProvenance() != stewardv1.Provenance_PROVENANCE_OBSERVED:
		return nil, errs.New(errs.FailedPrecondition, "task %s: milestone %s reached its cap of %d actions and decisions", id, d.MilestoneId, MilestoneOf(t, d.MilestoneId).MaxActions)
	}
	for i, c := range d.ContextIds {
		if slices.Contains(d.ContextIds[:i], c) {
			return nil, errs.Field(fmt.Sprintf("decision.context_ids[%d]", i), "cites %s twice", errs.Quote(c))
		}
		if FindContext(t, c) == nil {
			return nil, errs.Field(fmt.Sprintf("decision.context_ids[%d]", i), "task %s has no context item %s: attach it first (AttachContext)", id, errs.Quote(c))
		}
	}
	call := d.GetCall()
	charged := DecisionCharges(d)
	tokens := call.GetTokensIn() + call.GetTokensOut()
	if charged {
		if d.MilestoneId != "" && !KnownMilestone(t.Contract, d.MilestoneId) {
			return nil, unknownMilestone(t, "decision.milestone_id", d.MilestoneId)
		}
		if tokens < call.GetTokensIn() {
			return nil, errs.Field("decision.call.tokens_out", "overflows the tokens in")
		}
		if err := CheckSpend(t, tokens, call.GetCostMicros()); err != nil {
			return nil, err
		}
	}
	return func() {
		d := proto.CloneOf(d)
		d.RecordedBy, d.RecordedAt = ev.Actor.GetPrincipal(), ev.Time
		t.Decisions = append(t.Decisions, d)
		for _, c := range d.ContextIds {
			cite(t, c, d.DecisionId)
		}
		if charged {
			spend(t, tokens, call.GetCostMicros(), d.MilestoneId)
		}
	}, nil
}

// cite notes that decision decisionID cites context item contextID of t,
// on a copy of the item: views handed out earlier may share the old one.
func cite(t *stewardv1.Task, contextID, decisionID string) {
	items := slices.Clone(t.ContextItems)
	for i, item := range items {
		if item.ContextId == contextID {
			item = proto.CloneOf(item)
			item.CitedBy = append(item.CitedBy, decisionID)
			items[i] = item
			break
		}
	}
	t.ContextItems = items
}

// DecisionCharges reports whether recording d charges the task's budget:
// a reported call that spent something. An observed one was charged by
// the action that made the call, and is not charged twice.
func DecisionCharges(d *stewardv1.Decision) bool {
	c := d.GetCall()
	return c.GetProvenance() == stewardv1.Provenance_PROVENANCE_REPORTED && (c.GetTokensIn() > 0 || c.GetTokensOut() > 0 || c.GetCostMicros() > 0)
}

func attachContext(t *stewardv1.Task, ev *stewardv1.Event, item *stewardv1.ContextItem) (func(), error) {
	id := t.Contract.GetTaskId()
	switch {
	case Terminal(t.Status):
		return nil, illegal(t, "attach context to")
	case item.GetContextId() == "":
		return nil, errs.Field("item.context_id", "is required")
	case FindContext(t, item.ContextId) != nil:
		return nil, errs.New(errs.AlreadyExists, "task %s already holds context item %s", id, errs.Quote(item.ContextId))
	case len(t.ContextItems) >= MaxContextItems:
		return nil, errs.New(errs.FailedPrecondition, "task %s holds %d context items, the most a task may hold", id, MaxContextItems)
	}
	return func() {
		item := proto.CloneOf(item)
		item.AttachedBy, item.AttachedAt, item.CitedBy = ev.Actor.GetPrincipal(), ev.Time, nil
		t.ContextItems = append(t.ContextItems, item)
	}, nil
}

// DecisionFlags returns what is wrong with the context d cites in t's
// ledger, at the time d was made (decided_at, else at): an item that had
// expired, or one that may not go to d's model provider. A decision is
// recorded with its flags, never refused for them: it was made already.
func DecisionFlags(t *stewardv1.Task, d *stewardv1.Decision, at *timestamppb.Timestamp) []*stewardv1.DecisionFlag {
	when := d.GetDecidedAt()
	if when == nil {
		when = at
	}
	provider := d.GetCall().GetProvider()
	var flags []*stewardv1.DecisionFlag
	for _, c := range d.GetContextIds() {
		item := FindContext(t, c)
		if item == nil {
			continue // refused by the fold
		}
		if Expired(item, when.AsTime()) {
			flags = append(flags, &stewardv1.DecisionFlag{Kind: stewardv1.DecisionFlagKind_DECISION_FLAG_KIND_CONTEXT_EXPIRED, ContextId: c,
				Detail: fmt.Sprintf("expired at %s, by the decision at %s", item.ExpiresAt.AsTime().UTC().Format(timeLayout), when.AsTime().UTC().Format(timeLayout))})
		}
		if !MaySendTo(item, provider) {
			flags = append(flags, &stewardv1.DecisionFlag{Kind: stewardv1.DecisionFlagKind_DECISION_FLAG_KIND_CONTEXT_EGRESS, ContextId: c,
				Detail: fmt.Sprintf("may go to %s, not to %s", egressWords(item.Egress), errs.Quote(provider))})
		}
	}
	return flags
}

// Expired reports whether item had expired at at: from its expiry on.
// Governance holds a model call citing it, and a decision citing it is
// flagged, by the same rule.
func Expired(item *stewardv1.ContextItem, at time.Time) bool {
	exp := item.GetExpiresAt()
	return exp != nil && !at.Before(exp.AsTime())
}

// MaySendTo reports whether item may be sent to a model of provider.
func MaySendTo(item *stewardv1.ContextItem, provider string) bool {
	return slices.Contains(item.GetEgress(), AnyProvider) || provider != "" && slices.Contains(item.GetEgress(), provider)
}

func egressWords(egress []string) string {
	if len(egress) == 0 {
		return "no model provider"
	}
	return fmt.Sprintf("%v only", egress)
}

// timeLayout is how flags write times: to the second, as people read them.
const timeLayout = "2006-01-02T15:04:05Z"

// FindDecision returns t's decision with id, or nil.
func FindDecision(t *stewardv1.Task, id string) *stewardv1.Decision {
	for _, d := range t.Decisions {
		if d.DecisionId == id {
			return d
		}
	}
	return nil
}

// FindContext returns t's context item with id, or nil.
func FindContext(t *stewardv1.Task, id string) *stewardv1.ContextItem {
	for _, c := range t.ContextItems {
		if c.ContextId == id {
			return c
		}
	}
	return nil
}
