package auditbundle

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/audit"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// snapshotAt is one policy snapshot found in a task's events: of an
// action (actionID; permit set when it came with its permit), of a plan
// version (plan set), or of a revision of the task's contract (revision).
type snapshotAt struct {
	item     string
	snap     *stewardv1.PolicySnapshot
	actionID string
	permit   *stewardv1.ActionPermit
	plan     *stewardv1.PlanEvaluated
	revision string
}

// snapshots are the snapshots t's events record, of actions, of plan
// versions and of contract revisions.
func snapshots(t *bundleTask) []snapshotAt {
	var out []snapshotAt
	for i, rec := range t.recs {
		ev := rec.Event
		item := fmt.Sprintf("task %s event %d (%s)", t.id, i, ev.EventId)
		switch {
		case ev.GetPolicyEvaluated() != nil:
			pe := ev.GetPolicyEvaluated()
			out = append(out, snapshotAt{item: item, snap: pe.Snapshot, actionID: pe.ActionId})
		case ev.GetActionPermitted().GetSnapshot() != nil:
			pm := ev.GetActionPermitted()
			out = append(out, snapshotAt{item: item, snap: pm.Snapshot, actionID: pm.GetPermit().GetActionId(), permit: pm.Permit})
		case ev.GetPlanEvaluated() != nil:
			out = append(out, snapshotAt{item: item, snap: ev.GetPlanEvaluated().Snapshot, plan: ev.GetPlanEvaluated()})
		case ev.GetContractRevisionEvaluated().GetSnapshot() != nil:
			re := ev.GetContractRevisionEvaluated()
			out = append(out, snapshotAt{item: item, snap: re.Snapshot, revision: re.RevisionId})
		}
	}
	return out
}

// checkPolicy re-evaluates every snapshot from its recorded input under
// its own revision's sources, and checks inputs and sources re-hash.
func checkPolicy(ctx context.Context, b *stewardv1.AuditBundle, tasks []*bundleTask, c Checks, r *Report) {
	inputs := checkBlobs(SectionInputs, b.Inputs, r)
	admitErased(b, map[string]map[string][]byte{SectionInputs: inputs}, r)
	restored := map[string]bool{}
	engines := map[string]Evaluator{}
	for _, src := range b.Policies {
		restored[src.Revision] = true
		if c.Restore == nil {
			continue
		}
		ev, err := c.Restore(ctx, src)
		if err != nil {
			r.fail(SectionPolicies, "revision "+src.Revision, "%v", err)
			continue
		}
		engines[src.Revision] = ev
	}
	for _, t := range tasks {
		for _, s := range snapshots(t) {
			r.Snapshots++
			input, ok := keptInput(t, s, inputs, restored, r)
			if !ok || c.Restore == nil {
				continue
			}
			if eval, ok := engines[s.snap.BundleRevision]; ok && reevaluates(ctx, t, s, input, eval, r) {
				r.Reevaluated++
			}
		}
	}
	if c.Restore == nil {
		r.note("policy not re-evaluated: this verifier was given no policy engine")
	}
}

// keptInput is s's recorded input, checked against what it decided, when
// the bundle holds it and its revision's sources. A snapshot that says
// its input was kept fails without either; one recorded before inputs
// were kept gets a note (inputNotKept).
func keptInput(t *bundleTask, s snapshotAt, inputs map[string][]byte, restored map[string]bool, r *Report) ([]byte, bool) {
	if s.permit != nil && audit.UnboundSnapshot(s.permit) {
		snapshotNotSigned(r, s)
	}
	if s.revision != "" {
		revisionNotReevaluated(r, s)
		return nil, false
	}
	if !s.snap.InputKept {
		inputNotKept(r, s)
		return nil, false
	}
	input, ok := inputs[s.snap.InputHash]
	if !ok {
		r.fail(SectionInputs, s.item, "the input %s that snapshot %s was decided on is not in the bundle", s.snap.InputHash, s.snap.SnapshotId)
	}
	if !restored[s.snap.BundleRevision] {
		r.fail(SectionPolicies, s.item, "the sources of revision %s that decided snapshot %s are not in the bundle", s.snap.BundleRevision, s.snap.SnapshotId)
		ok = false
	}
	if ok && input == nil { // erased: admitErased noted it
		return nil, false
	}
	if ok {
		if why := inputFault(t, s, input); why != "" {
			r.fail(SectionInputs, s.item, "the input of snapshot %s is not about what it decided: %s", s.snap.SnapshotId, why)
			ok = false
		}
	}
	return input, ok
}

// reevaluates reports whether s re-evaluates, from input under eval, to
// the decision recorded, and fails it under policies when not.
func reevaluates(ctx context.Context, t *bundleTask, s snapshotAt, input []byte, eval Evaluator, r *Report) bool {
	got, err := eval(ctx, input, s.snap.EvaluatedAt.AsTime(), s.plan != nil)
	if err != nil {
		r.fail(SectionPolicies, s.item, "snapshot %s does not re-evaluate: %v", s.snap.SnapshotId, err)
		return false
	}
	if why := sameDecision(got, s.snap, input, planApproval(t, s)); why != "" {
		r.fail(SectionPolicies, s.item, "snapshot %s re-evaluates differently under revision %s: %s", s.snap.SnapshotId, s.snap.BundleRevision, why)
		return false
	}
	return true
}

// decisions maps policy's words to the snapshot's enum.
var decisions = map[string]stewardv1.PolicyDecision{
	"allow":            stewardv1.PolicyDecision_POLICY_DECISION_ALLOW,
	"deny":             stewardv1.PolicyDecision_POLICY_DECISION_DENY,
	"require_approval": stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL,
}

// sameDecision says how the snapshot s differs from policy's decision got
// on input, or "". Governance records policy's decision with two holds of
// its own on top (services/governance: askAlways, holdContext), told by
// their reasons: a tool that asks a person for every call turns an allow
// into require_approval, adding a reason; a context item that may not go
// to a model turns any decision into a deny with only such reasons; a
// plan evaluated again after its approval ap, which policy no longer
// supports, is denied with a reason first that says why (heldAfterApproval).
// The risk tier is policy's, never below the contract's.
func sameDecision(got Decision, s *stewardv1.PolicySnapshot, input []byte, ap *stewardv1.Approval) string {
	want := decisions[got.Decision]
	if got.Revision != s.BundleRevision {
		return fmt.Sprintf("evaluated under %s", got.Revision)
	}
	if s.Decision == stewardv1.PolicyDecision_POLICY_DECISION_DENY && want != s.Decision && len(s.Reasons) > 0 &&
		!slices.ContainsFunc(s.Reasons, func(r string) bool { return !strings.HasPrefix(r, "context item ") }) {
		return "" // held back by a context item: policy's decision was not recorded
	}
	reasons := s.Reasons
	if want == stewardv1.PolicyDecision_POLICY_DECISION_ALLOW && s.Decision == stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL &&
		len(reasons) == len(got.Reasons)+1 && strings.Contains(reasons[len(reasons)-1], "asks a person for every call") {
		want, reasons = s.Decision, reasons[:len(got.Reasons)]
	}
	if heldAfterApproval(got, s, ap) {
		want, reasons = s.Decision, reasons[1:]
	}
	switch {
	case want != s.Decision:
		return fmt.Sprintf("policy says %s, the snapshot %s", got.Decision, s.Decision)
	case !slices.Equal(reasons, got.Reasons):
		return fmt.Sprintf("policy gives the reasons %q, the snapshot %q", got.Reasons, reasons)
	case !task.SameRoles(got.RequiredApproverRoles, s.RequiredApproverRoles) || got.RequiredApprovals != s.RequiredApprovals:
		return fmt.Sprintf("policy asks %d of %v, the snapshot %d of %v", got.RequiredApprovals, got.RequiredApproverRoles, s.RequiredApprovals, s.RequiredApproverRoles)
	}
	if tier := riskOf(got.RiskTier, contractTier(input)); tier != s.RiskTier {
		return fmt.Sprintf("risk tier %s, the snapshot %s", tier, s.RiskTier)
	}
	return ""
}

// riskOf is policy's tier, never lower than the contract's (as
// governance records it).
func riskOf(s string, contract stewardv1.RiskTier) stewardv1.RiskTier {
	return max(stewardv1.RiskTier(stewardv1.RiskTier_value[s]), contract)
}

// contractTier is the contract's risk tier as the recorded input holds it.
func contractTier(input []byte) stewardv1.RiskTier {
	var doc struct {
		Risk struct {
			Tier string `json:"contract_risk_tier"`
		} `json:"risk"`
	}
	_ = json.Unmarshal(input, &doc) // an unreadable input failed its evaluation already
	return stewardv1.RiskTier(stewardv1.RiskTier_value[doc.Risk.Tier])
}

// heldAfterApproval reports whether s is governance's deny of a plan
// whose approval ap policy, deciding got, no longer supports
// (task.ChangedSinceApproval, checked against the approval's terms): its
// first reason says exactly why. A reload between the evaluation and the
// check is such a reason too, whatever policy decided.
func heldAfterApproval(got Decision, s *stewardv1.PolicySnapshot, ap *stewardv1.Approval) bool {
	if ap == nil || s.Decision != stewardv1.PolicyDecision_POLICY_DECISION_DENY || len(s.Reasons) == 0 {
		return false
	}
	fresh := &stewardv1.PolicySnapshot{BundleRevision: s.BundleRevision, Decision: decisions[got.Decision], RequiredApproverRoles: got.RequiredApproverRoles, RequiredApprovals: got.RequiredApprovals}
	if fresh.Decision == stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL && len(fresh.RequiredApproverRoles) == 0 {
		fresh.RequiredApproverRoles = []string{task.DefaultApproverRole}
	}
	why := task.ChangedSinceApproval(fresh, ap, s.BundleRevision, "the plan")
	replaced := task.ChangedSinceApproval(fresh, ap, "", "the plan")
	return (why != "" && s.Reasons[0] == task.PlanChangedReason(why)) || s.Reasons[0] == task.PlanChangedReason(replaced)
}
