package state

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// charge puts the spending ev records on its rows, as the fold charges it
// to the task (pkg/task: spend, release).
func (x *costTally) charge(ev *stewardv1.Event) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ActionOutcomeRecorded:
		o := p.ActionOutcomeRecorded.Outcome
		s, m := x.ofAction(p.ActionOutcomeRecorded.ActionId)
		add(o.GetTokens(), o.GetCostMicros(), s, m)
	case *stewardv1.Event_ActionDenied:
		s, m := x.ofAction(p.ActionDenied.ActionId)
		add(0, p.ActionDenied.CostMicros, s, m)
	case *stewardv1.Event_DecisionRecorded:
		d := p.DecisionRecorded.Decision
		if !task.DecisionCharges(d) {
			return
		}
		c := d.GetCall()
		s := x.step(rowKey{stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_DECISION, d.DecisionId, d.MilestoneId})
		m := x.milestone(d.MilestoneId)
		add(c.GetTokensIn()+c.GetTokensOut(), c.GetCostMicros(), s, m)
		s.touch(ev.Time)
		m.touch(ev.Time)
	case *stewardv1.Event_BudgetConsumed:
		c := p.BudgetConsumed
		k := rowKey{stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_REPORTED_USAGE, "", c.MilestoneId}
		if c.ReservedFor != "" || strings.HasPrefix(c.Source, "reserved for ") {
			k.kind = stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_RESERVED
		}
		s, m := x.step(k), x.milestone(c.MilestoneId)
		add(c.Tokens, c.CostMicros, s, m)
		s.touch(ev.Time)
		m.touch(ev.Time)
	case *stewardv1.Event_BudgetReleased:
		// A release comes back to the task, never to a milestone.
		r := p.BudgetReleased
		add(-r.Tokens, -r.CostMicros, x.step(rowKey{kind: stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_RESERVED}), x.milestone(""))
	}
}

// count tallies ev's retries, failures and interventions, as readHistory
// tells them. dispatches and inFlight follow each action's dispatches.
func (x *costTally) count(ev *stewardv1.Event, dispatches map[string]uint32, inFlight map[string]bool) {
	onAction := func(id string, f func(r costRow)) {
		s, m := x.ofAction(id)
		f(s)
		f(m)
	}
	onStep := func(id string, f func(r costRow)) {
		k := x.planStep(id)
		s := x.step(k)
		s.touch(ev.Time)
		f(s)
		f(x.milestone(k.milestone))
	}
	retry := func(r costRow) { r.Retries++ }
	failure := func(r costRow) { r.Failures++ }
	intervention := func(r costRow) { r.Interventions++ }
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ActionDispatched:
		id := p.ActionDispatched.ActionId
		if dispatches[id]++; dispatches[id] > 1 {
			onAction(id, retry)
		}
		inFlight[id] = true
	case *stewardv1.Event_ActionOutcomeRecorded:
		if s := p.ActionOutcomeRecorded.Outcome.GetStatus(); s == stewardv1.ActionStatus_ACTION_STATUS_FAILED || s == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
			onAction(p.ActionOutcomeRecorded.ActionId, failure)
		}
	case *stewardv1.Event_ActionWaiting:
		if w := p.ActionWaiting; w.Kind == stewardv1.WaitKind_WAIT_KIND_RETRY && inFlight[w.ActionId] {
			onAction(w.ActionId, failure)
		}
	case *stewardv1.Event_ActionSettled:
		st := p.ActionSettled
		if st.State == stewardv1.SettleState_SETTLE_STATE_FAILED {
			onAction(st.ActionId, failure)
		}
		if st.SettledBy != statusQuerySettler {
			onAction(st.ActionId, intervention)
		}
	case *stewardv1.Event_ApprovalDecided:
		if id := p.ApprovalDecided.ActionId; id != "" {
			onAction(id, intervention)
		} else {
			intervention(x.milestone(""))
		}
	case *stewardv1.Event_PlanStepStarted:
		if p.PlanStepStarted.Attempt > 1 {
			onStep(p.PlanStepStarted.StepId, retry)
		} else {
			onStep(p.PlanStepStarted.StepId, func(costRow) {})
		}
	case *stewardv1.Event_PlanStepEnded:
		if p.PlanStepEnded.Status == stewardv1.StepStatus_STEP_STATUS_FAILED {
			onStep(p.PlanStepEnded.StepId, failure)
		} else {
			onStep(p.PlanStepEnded.StepId, func(costRow) {})
		}
	case *stewardv1.Event_InputProvided:
		intervention(x.milestone(""))
	case *stewardv1.Event_TaskResumed:
		// A resume by Steward, or by the task's own agent (its creator or
		// whom its credential names, as access and liveness take it), is
		// no person's intervention.
		if who := ev.Actor.GetPrincipal(); who != "steward" && who != x.t.CreatedBy && who != x.t.Credential.GetCredential().GetPrincipal() {
			intervention(x.milestone(""))
		}
	}
}

// result orders the rows: the contract's milestones, others as met, then
// "no milestone"; steps as met. A difference from the task's totals, which
// none is expected, is shown as a row rather than hidden.
func (x *costTally) result() *stewardv1.ReceiptBreakdown {
	b := &stewardv1.ReceiptBreakdown{}
	var ids []string
	for _, m := range x.t.Contract.GetBudget().GetMilestones() {
		ids = append(ids, m.MilestoneId)
	}
	var others []string
	for id := range x.milestones {
		if id != "" && !slices.Contains(ids, id) {
			others = append(others, id)
		}
	}
	slices.Sort(others)
	var tokens, cost int64
	for _, id := range append(append(ids, others...), "") {
		r := x.milestone(id).ReceiptCostRow
		b.Milestones = append(b.Milestones, r)
		tokens, cost = tokens+r.Tokens, cost+r.CostMicros
	}
	for _, k := range x.stepOrder {
		b.Steps = append(b.Steps, x.steps[k].ReceiptCostRow)
	}
	used := x.t.BudgetUsed
	if dt, dc := used.GetTokens()-tokens, used.GetCostMicros()-cost; dt != 0 || dc != 0 {
		gap := &stewardv1.ReceiptCostRow{Kind: stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_UNATTRIBUTED, Tokens: dt, CostMicros: dc}
		b.Milestones = append(b.Milestones, gap)
		b.Steps = append(b.Steps, proto.CloneOf(gap))
	}
	finish(b.Milestones, used.GetTokens(), used.GetCostMicros())
	finish(b.Steps, used.GetTokens(), used.GetCostMicros())
	if r := mostFailed(b.Milestones); r != nil {
		b.MostFailedMilestone = proto.CloneOf(r)
	}
	if r := mostFailed(b.Steps); r != nil {
		b.MostFailedStep = proto.CloneOf(r)
	}
	return b
}
