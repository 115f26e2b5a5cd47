package state

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// receiptPlan is the receipt's account of a task's plan: each version
// that replaced was in force before, as it stood when replaced, then cur,
// the one in force; nil if the task had no plan. It returns too the
// approval each version was asked, by approval id: an approval of a
// replaced version that nobody decided was closed by the revision.
func receiptPlan(cur *stewardv1.PlanState, replaced []*stewardv1.PlanState) (*stewardv1.ReceiptPlan, map[string]*stewardv1.ReceiptApproval) {
	if cur == nil {
		return nil, nil
	}
	rp := &stewardv1.ReceiptPlan{}
	approvals := map[string]*stewardv1.ReceiptApproval{}
	for _, ps := range append(replaced, cur) {
		v := &stewardv1.ReceiptPlanVersion{
			Version:        ps.Version,
			PlanHash:       ps.PlanHash,
			SubmittedBy:    ps.SubmittedBy,
			SubmittedAt:    ps.SubmittedAt,
			Governance:     ps.Governance,
			SnapshotId:     ps.Snapshot.GetSnapshotId(),
			PolicyRevision: ps.Snapshot.GetBundleRevision(),
			ApprovalId:     ps.Approval.GetApprovalId(),
			Revision:       ps.Revision,
			StepCount:      uint32(len(ps.Plan.GetSteps())),
		}
		rp.Versions = append(rp.Versions, v)
		if ps.Approval == nil {
			continue
		}
		a := receiptApproval(ps.Approval)
		if ps != cur && a.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED {
			a.Withdrawn = true
		}
		approvals[a.ApprovalId] = a
	}
	for _, st := range cur.Steps {
		rp.Steps = append(rp.Steps, proto.CloneOf(st))
	}
	for _, st := range cur.Retired {
		rp.Retired = append(rp.Retired, proto.CloneOf(st))
	}
	return rp, approvals
}

// planMarkdown renders the receipt's plan, if the task had one: each
// version and how governance judged it, then each step.
func planMarkdown(w md, p *stewardv1.ReceiptPlan) {
	if p == nil {
		return
	}
	w.section("Plan")
	var versions [][]string
	for _, v := range p.Versions {
		versions = append(versions, []string{fmt.Sprint(v.Version), code(v.PlanHash, true), fmt.Sprint(v.StepCount),
			orDash(text(v.SubmittedBy)), orDash(when(v.SubmittedAt)), task.PlanGovernanceName(v.Governance),
			orDash(code(v.PolicyRevision, true)), orDash(code(v.ApprovalId, true)), orDash(revisionWords(v.Revision))})
	}
	w.table(">Version | Hash | >Steps | Submitted by | Submitted | Governance | Policy revision | Approval | Revision", versions)
	w.line("")
	var steps [][]string
	row := func(st *stewardv1.PlanStepState, note string) {
		actions := make([]string, len(st.ActionIds))
		for i, id := range st.ActionIds {
			actions[i] = code(id, true)
		}
		steps = append(steps, []string{code(st.StepId, true), task.StepStatusName(st.Status) + note, fmt.Sprint(st.Attempts),
			orDash(strings.Join(actions, ", ")), orDash(code(st.SubTaskId, true)), orDash(text(st.Reason))})
	}
	for _, st := range p.Steps {
		row(st, "")
	}
	for _, st := range p.Retired {
		row(st, fmt.Sprintf(" (retired; version %d)", st.Version))
	}
	w.table("Step | Status | >Attempts | Actions | Sub-task | Reason", steps)
}

// revisionWords says what a revision did, in words: "kept 3, changed 1".
func revisionWords(r *stewardv1.PlanRevision) string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, c := range []struct {
		what string
		ids  []string
	}{{"kept", r.Kept}, {"changed", r.Changed}, {"added", r.Added}, {"withdrew", r.Withdrawn}} {
		if len(c.ids) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c.what, len(c.ids)))
		}
	}
	return strings.Join(parts, ", ")
}
