package state

import (
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// tally is what one walk over the views counts. docs/metrics.md defines
// each metric in these terms.
type tally struct {
	// views are tasks with a current view; broken, tasks without one.
	views, broken int
	tasks         map[stewardv1.TaskStatus]int
	// workEnded counts tasks whose work is over (produced, accepted,
	// failed, cancelled); completed, those of them produced or accepted;
	// accepted, the accepted ones.
	workEnded, completed, accepted int
	// acceptance rounds decided, and of them those accepted.
	roundsDecided, roundsAccepted int
	// spent is what every task spent, by currency, with the number of
	// accepted tasks in that currency; tokens, every token spent.
	spent      map[string]*spending
	tokens     int64
	toAccepted histogram
	// intervened counts tasks a person stepped into.
	intervened int
	actions    map[stewardv1.ActionStatus]int
	failed     map[stewardv1.FailureClass]int
	// evaluated counts actions with a policy snapshot; blocked, those of
	// them denied or sent to a person for approval.
	evaluated, blocked int
	// writes counts succeeded writes that are not compensations; undone,
	// those of them Steward set out to undo.
	writes, undone int
	// sideEffects counts writes whose calls ended; traced, those of them
	// with their whole trace.
	sideEffects, traced int
	violations          int
	flagged             map[stewardv1.DecisionFlagKind]int
	modelSwaps          int // undeclared model swaps (docs/fallbacks.md)
	permits             [2]histogram
	recoveries          [2]histogram
}

// decisionFlagKinds are the flags steward_decisions_flagged always shows,
// at zero too, so that an alert on them has a series to watch.
var decisionFlagKinds = []stewardv1.DecisionFlagKind{
	stewardv1.DecisionFlagKind_DECISION_FLAG_KIND_CONTEXT_EXPIRED,
	stewardv1.DecisionFlagKind_DECISION_FLAG_KIND_CONTEXT_EGRESS,
}

// spending is what the tasks of one currency spent, and how many of them
// were accepted.
type spending struct {
	accepted int
	micros   int64
}

// tally walks every view once under the read lock. Tasks in the broken set
// are counted as broken, and their side effects as untraced: their views
// stopped at a refused event and are not current (Get refuses them too).
func (p *Projection) tally() tally {
	p.awaitStubs()
	t := tally{
		tasks:   map[stewardv1.TaskStatus]int{},
		actions: map[stewardv1.ActionStatus]int{},
		failed: map[stewardv1.FailureClass]int{
			stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT:     0,
			stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC: 0,
			stewardv1.FailureClass_FAILURE_CLASS_VALIDATION:    0,
		},
		permits:    [2]histogram{newHistogram(PermitLatencyBuckets), newHistogram(PermitLatencyBuckets)},
		recoveries: [2]histogram{newHistogram(RecoveryBuckets), newHistogram(RecoveryBuckets)},
		spent:      map[string]*spending{},
		flagged:    map[stewardv1.DecisionFlagKind]int{},
		toAccepted: newHistogram(TimeToAcceptedBuckets),
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	t.broken = len(p.broken)
	for id, v := range p.tasks {
		if _, bad := p.broken[id]; bad {
			t.countUntraced(v.task)
			continue
		}
		t.count(v)
	}
	return t
}

// count adds one task and its actions to t.
func (t *tally) count(view *view) {
	v := view.task
	t.views++
	t.tasks[v.Status]++
	t.countEnds(v)
	for i, took := range view.recoveries.took {
		for _, d := range took {
			t.recoveries[i].observe(d)
		}
	}
	undone := undoneWrites(v)
	intervened := view.answered
	for _, a := range v.Actions {
		if a.Carried {
			continue // a fork's parent's: counted there
		}
		t.actions[a.Status]++
		if a.Status == stewardv1.ActionStatus_ACTION_STATUS_FAILED {
			t.failed[a.GetOutcome().GetFailureClass()]++
		}
		if a.Snapshot != nil {
			t.evaluated++
			if blocked(a) {
				t.blocked++
			}
		}
		if a.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED && write(a) && a.Compensates == "" {
			t.writes++
			if undone[a.ActionId] {
				t.undone++
			}
		}
		if sideEffect(a) {
			t.sideEffects++
			if traced(a) {
				t.traced++
			}
		}
		intervened = intervened || a.GetApproval().GetDecision() != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED ||
			a.SettledBy != "" && a.SettledBy != statusQuerySettler
		if a.GetPermit().GetIssuedAt() != nil && a.ProposedAt != nil {
			// Permits are stamped by governance and proposals by control,
			// maybe on different hosts: a little clock skew must not make
			// a negative latency.
			d := max(a.Permit.IssuedAt.AsTime().Sub(a.ProposedAt.AsTime()), 0)
			i := 0
			if a.Approval != nil {
				i = 1
			}
			t.permits[i].observe(d)
		}
	}
	if intervened {
		t.intervened++
	}
}

// countEnds counts how v's work ended: its acceptance rounds, its end,
// its spending, its findings and its flagged decisions.
func (t *tally) countEnds(v *stewardv1.Task) {
	for _, r := range v.Acceptance {
		switch r.Decision {
		case stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED:
			t.roundsAccepted++
			t.roundsDecided++
		case stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_RETURNED, stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED:
			t.roundsDecided++
		}
	}
	switch v.Status {
	case stewardv1.TaskStatus_TASK_STATUS_PRODUCED, stewardv1.TaskStatus_TASK_STATUS_ACCEPTED:
		t.workEnded++
		t.completed++
	case stewardv1.TaskStatus_TASK_STATUS_FAILED, stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
		t.workEnded++
	}
	t.countSpending(v)
	for _, f := range v.Findings {
		if f.Kind == stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION {
			t.violations++
		}
	}
	for _, d := range v.Decisions {
		for _, f := range d.Flags {
			t.flagged[f.Kind]++
		}
	}
	t.modelSwaps += len(v.UndeclaredModelSwaps)
}

// undoneWrites returns the ids of the writes v set out to undo: named by
// its compensation, or by a compensation action; nil, without allocating,
// for the many tasks that undid nothing.
func undoneWrites(v *stewardv1.Task) map[string]bool {
	var out map[string]bool
	add := func(id string) {
		if out == nil {
			out = map[string]bool{}
		}
		out[id] = true
	}
	for _, id := range v.Compensations {
		add(id)
	}
	for _, a := range v.Actions {
		if a.Compensates != "" {
			add(a.Compensates)
		}
	}
	return out
}

// countUntraced counts the side effects of a broken task as untraced: its
// history does not verify, so nothing it did has a trace to stand on.
func (t *tally) countUntraced(v *stewardv1.Task) {
	for _, a := range v.Actions {
		if sideEffect(a) && !a.Carried {
			t.sideEffects++
		}
	}
}

// countSpending adds what a task spent, whatever became of it, to its
// currency's spending; an accepted one also counts as accepted there,
// with its time to acceptance: from its creation to the decision on its
// last round.
func (t *tally) countSpending(v *stewardv1.Task) {
	currency := v.Contract.GetBudget().GetCurrency()
	s := t.spent[currency]
	if s == nil {
		s = &spending{}
		t.spent[currency] = s
	}
	s.micros += v.BudgetUsed.GetCostMicros()
	t.tokens += v.BudgetUsed.GetTokens()
	if v.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED {
		return
	}
	t.accepted++
	s.accepted++
	if n := len(v.Acceptance); n > 0 && v.CreatedAt != nil && v.Acceptance[n-1].DecidedAt != nil {
		t.toAccepted.observe(max(v.Acceptance[n-1].DecidedAt.AsTime().Sub(v.CreatedAt.AsTime()), 0))
	}
}

// blocked reports whether policy did not simply let a evaluated action
// run: it was denied (by policy, or by governance's other checks: a
// spent budget, a revoked credential, an ended task), or a person was
// asked to approve it, whatever they said.
func blocked(a *stewardv1.Action) bool {
	switch a.GetSnapshot().GetDecision() {
	case stewardv1.PolicyDecision_POLICY_DECISION_DENY, stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL:
		return true
	}
	return a.Status == stewardv1.ActionStatus_ACTION_STATUS_DENIED || a.Approval != nil
}

// write reports whether a changes the world: any effect class but read
// (an unknown one may be irreversible).
func write(a *stewardv1.Action) bool { return a.EffectClass != stewardv1.EffectClass_EFFECT_CLASS_READ }

// sideEffect reports whether a is a side effect to trace: a write, a
// compensation included, that was dispatched and whose calls have ended
// — succeeded, failed, or unknown. One still in flight or waiting to try
// again is counted once it ends.
func sideEffect(a *stewardv1.Action) bool {
	if !write(a) || a.Attempt == 0 {
		return false
	}
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, stewardv1.ActionStatus_ACTION_STATUS_FAILED, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN:
		return true
	}
	return false
}

// traced reports whether a side effect has its whole trace: the policy
// snapshot that decided it, the permit it ran under, an approval where
// one was asked for or policy requires one, the credential its permit
// names, and an outcome that is known.
func traced(a *stewardv1.Action) bool {
	needsApproval := a.Approval != nil || a.GetSnapshot().GetDecision() == stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
	switch {
	case a.Snapshot == nil, a.Permit == nil, a.Permit.CredentialRef == "":
		return false
	case needsApproval && a.GetApproval().GetDecision() != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE:
		return false
	}
	return a.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN
}
