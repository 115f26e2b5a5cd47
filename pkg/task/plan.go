package task

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The task's plan (docs/plans.md): the version in force, governance's
// judgement of it, and where each of its steps stands.
//
// The fold cannot evaluate a plan: pkg/plan (CEL, canonical JSON through
// pkg/action) is more than the offline auditor's fold may carry. So it
// trusts the control plane, which owns PlanSubmitted, for the plan's
// validity and hash, and checks what it can from the events alone: the
// task takes plans, versions only go up, a revision accounts for every
// step of the version it replaces, and a judgement is of the version in
// force.

const (
	stepPending   = stewardv1.StepStatus_STEP_STATUS_PENDING
	stepRunning   = stewardv1.StepStatus_STEP_STATUS_RUNNING
	stepWithdrawn = stewardv1.StepStatus_STEP_STATUS_WITHDRAWN
)

// planStep checks a plan event against t and returns the change to make;
// ok is false for other events.
func planStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_PlanSubmitted:
		commit, err = submission(t, ev, p.PlanSubmitted)
	case *stewardv1.Event_PlanEvaluated:
		commit, err = planEvaluation(t, ev, p.PlanEvaluated)
	case *stewardv1.Event_PlanStepStarted:
		commit, err = stepStart(t, ev, p.PlanStepStarted)
	case *stewardv1.Event_PlanStepEnded:
		commit, err = stepEnd(t, ev, p.PlanStepEnded)
	default:
		return nil, false, nil
	}
	return commit, true, err
}

// submission checks a submitted plan version against t and returns the
// change to make: the new version in force, pending governance, with the
// state of every step it keeps.
func submission(t *stewardv1.Task, ev *stewardv1.Event, s *stewardv1.PlanSubmitted) (func(), error) {
	id := t.Contract.GetTaskId()
	v := s.GetPlan().GetVersion()
	switch cur := t.Plan; {
	case !Active(t.Status):
		return nil, errs.New(errs.FailedPrecondition, "task %s is %s; only a running task takes a plan", id, StatusName(t.Status))
	case v == 0 || len(s.GetPlan().GetSteps()) == 0:
		return nil, errs.New(errs.FailedPrecondition, "task %s: a submitted plan has no version or no steps", id)
	case s.PlanHash == "":
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d has no hash", id, v)
	case cur != nil && v <= cur.Version:
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d is not higher than its current version %d", id, v, cur.Version)
	case s.GetPlan().GetDecisionId() != "" && FindDecision(t, s.Plan.DecisionId) == nil:
		return nil, errs.Field("plan.decision_id", "task %s has recorded no decision %s: record it first (RecordDecision)", id, errs.Quote(s.Plan.DecisionId))
	}
	if err := checkRevision(t.Plan, s); err != nil {
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d: %v", id, v, err)
	}
	return func() {
		t.Plan = revised(t.Plan, s, ev, t.Actions)
		followLedger(t) // progress.remaining follows the plan
	}, nil
}

// checkRevision checks that s's revision accounts for the steps of the
// version it replaces, cur, by id: kept and changed steps are in both,
// added ones only in the new version, withdrawn ones only in the old.
func checkRevision(cur *stewardv1.PlanState, s *stewardv1.PlanSubmitted) error {
	r := s.GetRevision()
	if cur == nil {
		if r != nil {
			return fmt.Errorf("a first version revises nothing")
		}
		return nil
	}
	if r.GetReplacesVersion() != cur.Version {
		return fmt.Errorf("it revises version %d, not the current version %d", r.GetReplacesVersion(), cur.Version)
	}
	var ids []string
	for _, st := range s.Plan.Steps {
		ids = append(ids, st.GetId())
	}
	if !sameIDs(ids, r.Kept, r.Changed, r.Added) {
		return fmt.Errorf("its revision's kept, changed and added steps are not its steps")
	}
	if !sameIDs(stepIDs(cur.Plan), r.Kept, r.Changed, r.Withdrawn) {
		return fmt.Errorf("its revision's kept, changed and withdrawn steps are not the steps of version %d", cur.Version)
	}
	return nil
}

// sameIDs reports whether ids, each once, are the ids of the lists
// together, each once.
func sameIDs(ids []string, lists ...[]string) bool {
	want := make(map[string]int, len(ids))
	for _, id := range ids {
		want[id]++
	}
	n := 0
	for _, l := range lists {
		for _, id := range l {
			if want[id] != 1 {
				return false
			}
			want[id]++
			n++
		}
	}
	return n == len(ids) && len(want) == len(ids)
}

func stepIDs(p *stewardv1.Plan) []string {
	ids := make([]string, 0, len(p.GetSteps()))
	for _, s := range p.GetSteps() {
		ids = append(ids, s.GetId())
	}
	return ids
}

// revised returns the plan state after s: a new PlanState, never cur
// changed in place, since views handed out earlier may share it.
//
// A step the new version keeps or changes keeps its state: a succeeded
// step is never redone, and an action in flight stays in flight. A
// changed step that has started keeps the version of the definition it
// started under, so that the plan driver can tell whether what it began
// is still what the plan asks (it keeps an action whose canonical
// request is unchanged). A changed step that was skipped never started:
// it starts afresh too. A step the new version leaves out is retired:
// withdrawn unless it had finished; so are the task's actions the
// revision leaves to no step (leftBehind).
func revised(cur *stewardv1.PlanState, s *stewardv1.PlanSubmitted, ev *stewardv1.Event, actions []*stewardv1.Action) *stewardv1.PlanState {
	v := s.Plan.Version
	next := &stewardv1.PlanState{
		Version:     v,
		PlanHash:    s.PlanHash,
		Plan:        proto.CloneOf(s.Plan),
		Governance:  stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING,
		Revision:    proto.CloneOf(s.Revision),
		SubmittedBy: ev.Actor.GetPrincipal(),
		SubmittedAt: ev.Time,
		Retired:     append(slices.Clip(cur.GetRetired()), leftBehind(cur, s, actions)...),
		// The version's own: the driver opens them only into its literals.
		SealedSecrets: s.SealedSecrets,
	}
	old := make(map[string]*stewardv1.PlanStepState, len(cur.GetSteps()))
	for _, st := range cur.GetSteps() {
		old[st.StepId] = st
	}
	for _, step := range s.Plan.Steps {
		st, ok := old[step.GetId()]
		switch {
		case !ok || st.Status == stepPending || (st.Status == stepSkipped && slices.Contains(s.Revision.GetChanged(), step.GetId())):
			// New, or not started: it starts under this version, after
			// any attempt of a retired state of the same step.
			next.Steps = append(next.Steps, &stewardv1.PlanStepState{StepId: step.GetId(), Status: stepPending, Version: v,
				Attempts: max(st.GetAttempts(), retiredAttempts(next.Retired, step.GetId()))})
		case slices.Contains(s.Revision.GetKept(), step.GetId()):
			// Unchanged: the same step, under the new version — unless
			// it started under an older definition than the one kept
			// (a revision changed it while it ran), whose version it
			// keeps, as a changed step does.
			if st.Version == cur.GetVersion() {
				st = proto.CloneOf(st)
				st.Version = v
			}
			next.Steps = append(next.Steps, st)
		default:
			next.Steps = append(next.Steps, st) // changed: see above
		}
	}
	for _, id := range s.Revision.GetWithdrawn() {
		st := old[id]
		if st.GetStatus() == stepPending || st.GetStatus() == stepRunning {
			st = proto.CloneOf(st)
			st.Status, st.Reason = stepWithdrawn, fmt.Sprintf("withdrawn by plan version %d", v)
		}
		next.Retired = append(slices.Clip(next.Retired), st)
	}
	return next
}

// planEvaluation checks governance's judgement of a plan version against
// t. A judgement of a version that is no longer in force is refused, as a
// snapshot of a withdrawn action is: the moment for it has passed, and
// the version in force gets its own. A version is judged at most twice:
// when submitted, and, if that asked for an approval, once the approval
// is given — that judgement names it (approvedJudgement) — so no later
// one can overturn a deny.
func planEvaluation(t *stewardv1.Task, ev *stewardv1.Event, e *stewardv1.PlanEvaluated) (func(), error) {
	id := t.Contract.GetTaskId()
	cur := t.Plan
	var next stewardv1.PlanGovernance
	switch e.GetSnapshot().GetDecision() {
	case stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:
		next = stewardv1.PlanGovernance_PLAN_GOVERNANCE_ALLOWED
	case stewardv1.PolicyDecision_POLICY_DECISION_DENY:
		next = stewardv1.PlanGovernance_PLAN_GOVERNANCE_DENIED
	case stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL:
		next = stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL
	default:
		return nil, errs.New(errs.FailedPrecondition, "%s: task %s: plan version %d's snapshot decides nothing", ev.Type, id, e.Version)
	}
	switch {
	case cur == nil:
		return nil, errs.New(errs.FailedPrecondition, "%s: task %s has no plan", ev.Type, id)
	case e.Version != cur.Version || e.PlanHash != cur.PlanHash:
		return nil, errs.New(errs.FailedPrecondition, "%s: plan version %d (%s) is not task %s's plan in force, version %d (%s)",
			ev.Type, e.Version, errs.Quote(e.PlanHash), id, cur.Version, errs.Quote(cur.PlanHash))
	case e.ApprovalId != "":
		var err error
		if next, err = approvedJudgement(t, ev, e, next); err != nil {
			return nil, err
		}
	case cur.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING:
		return nil, errs.New(errs.FailedPrecondition, "%s: task %s: plan version %d was judged already (%s)", ev.Type, id, cur.Version, PlanGovernanceName(cur.Governance))
	}
	return func() {
		next := withPlan(cur, func(p *stewardv1.PlanState) {
			p.Governance = next
			p.Snapshot = e.Snapshot
		})
		t.Plan = next
		followLedger(t) // a denied plan has nothing left to run
	}, nil
}

// withPlan returns a shallow copy of p changed by change: the fields a
// change sets are replaced, never changed in place.
func withPlan(p *stewardv1.PlanState, change func(*stewardv1.PlanState)) *stewardv1.PlanState {
	next := &stewardv1.PlanState{
		Version: p.Version, PlanHash: p.PlanHash, Plan: p.Plan, Governance: p.Governance, Snapshot: p.Snapshot,
		Steps: p.Steps, Revision: p.Revision, SubmittedBy: p.SubmittedBy, SubmittedAt: p.SubmittedAt, Retired: p.Retired,
		Approval: p.Approval, SealedSecrets: p.SealedSecrets,
	}
	change(next)
	return next
}

// FindStep returns the state of the step with id in t's plan in force, or
// nil.
func FindStep(t *stewardv1.Task, id string) *stewardv1.PlanStepState {
	for _, s := range t.Plan.GetSteps() {
		if s.StepId == id {
			return s
		}
	}
	return nil
}

// PlanRuns reports whether governance lets p's steps run: allowed, or
// approved.
func PlanRuns(p *stewardv1.PlanState) bool {
	switch p.GetGovernance() {
	case stewardv1.PlanGovernance_PLAN_GOVERNANCE_ALLOWED, stewardv1.PlanGovernance_PLAN_GOVERNANCE_APPROVED:
		return true
	}
	return false
}

// PlanUnjudged reports whether governance owes p a judgement: p is not
// judged yet; or judged to need a person and no approval is asked for, or
// approved (PlanApproved) and not judged again since.
func PlanUnjudged(p *stewardv1.PlanState) bool {
	switch p.GetGovernance() {
	case stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING:
		return true
	case stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL:
		return p.Approval == nil || PlanApproved(p)
	}
	return false
}

// PlanApproved reports whether p awaits approval and its approval is
// decided: approved, waiting for governance's judgement after it.
func PlanApproved(p *stewardv1.PlanState) bool {
	return p.GetGovernance() == stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL &&
		p.GetApproval().GetDecision() == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE
}

// StepStatuses returns the status of each step of p by id (StepStatus),
// as pkg/plan.Ready takes them.
func StepStatuses(p *stewardv1.PlanState) map[string]stewardv1.StepStatus {
	m := make(map[string]stewardv1.StepStatus, len(p.GetSteps()))
	for _, s := range p.GetSteps() {
		m[s.StepId] = StepStatus(p, s)
	}
	return m
}

// planRemaining returns what is left of t's plan, for progress.remaining:
// the ids of its steps not yet finished, unless governance denied it
// (nothing of it will run), and the actions its steps own, which their
// steps stand for there. The actions of a retired step stand for
// themselves.
func planRemaining(t *stewardv1.Task) (steps []string, owned map[string]bool) {
	p := t.Plan
	if p == nil {
		return nil, nil
	}
	owned = map[string]bool{}
	for _, s := range p.Steps {
		for _, a := range s.ActionIds {
			owned[a] = true
		}
	}
	if PlanStopped(p) {
		return nil, owned
	}
	for _, s := range p.Steps {
		if st := StepStatus(p, s); st == stepPending || st == stepRunning {
			steps = append(steps, s.StepId)
		}
	}
	return steps, owned
}

// PlanGovernanceName returns g in words, e.g. "awaiting approval".
func PlanGovernanceName(g stewardv1.PlanGovernance) string {
	return enumWords(g.String(), "PLAN_GOVERNANCE_")
}

// followPlan makes progress.remaining come from t's plan: its unfinished
// steps, by id, then the actions under way that no step of it owns (the
// agent's own proposals, a retired step's action still in flight).
func followPlan(t *stewardv1.Task) {
	steps, owned := planRemaining(t)
	remaining := steps
	for _, id := range t.Progress.GetRemaining() {
		if !owned[id] {
			remaining = append(remaining, id)
		}
	}
	if slices.Equal(remaining, t.Progress.GetRemaining()) {
		return
	}
	t.Progress = &stewardv1.TaskProgress{Done: t.Progress.GetDone(), Failed: t.Progress.GetFailed(), Remaining: remaining}
}
