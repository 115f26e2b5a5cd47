package auditbundle

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// snapshotAt is one policy snapshot found in a task's events.
type snapshotAt struct {
	item string
	snap *stewardv1.PolicySnapshot
	plan bool
}

// snapshots are the snapshots t's events record, of actions and of plan
// versions.
func snapshots(t *bundleTask) []snapshotAt {
	var out []snapshotAt
	for i, rec := range t.recs {
		ev := rec.Event
		item := fmt.Sprintf("task %s event %d (%s)", t.id, i, ev.EventId)
		switch {
		case ev.GetPolicyEvaluated() != nil:
			out = append(out, snapshotAt{item, ev.GetPolicyEvaluated().Snapshot, false})
		case ev.GetActionPermitted().GetSnapshot() != nil:
			out = append(out, snapshotAt{item, ev.GetActionPermitted().Snapshot, false})
		case ev.GetPlanEvaluated() != nil:
			out = append(out, snapshotAt{item, ev.GetPlanEvaluated().Snapshot, true})
		}
	}
	return out
}

// checkPolicy re-evaluates every snapshot from its recorded input under
// its own revision's sources, and checks inputs and sources re-hash.
func checkPolicy(ctx context.Context, b *stewardv1.AuditBundle, tasks []*bundleTask, c Checks, r *Report) {
	inputs := checkBlobs(SectionInputs, b.Inputs, r)
	engines := map[string]Evaluator{}
	for _, src := range b.Policies {
		if c.Restore == nil {
			break
		}
		ev, err := c.Restore(ctx, src)
		if err != nil {
			r.fail(SectionPolicies, "revision "+src.Revision, "%v", err)
			continue
		}
		engines[src.Revision] = ev
	}
	if c.Restore == nil {
		for _, t := range tasks {
			r.Snapshots += len(snapshots(t))
		}
		r.note("policy not re-evaluated: this verifier was given no policy engine")
		return
	}
	for _, t := range tasks {
		for _, s := range snapshots(t) {
			r.Snapshots++
			input, ok := inputs[s.snap.InputHash]
			if !ok {
				inputNotKept(r, s)
				continue
			}
			eval, ok := engines[s.snap.BundleRevision]
			if !ok {
				r.fail(SectionPolicies, s.item, "the sources of revision %s that decided snapshot %s are not in the bundle", s.snap.BundleRevision, s.snap.SnapshotId)
				continue
			}
			got, err := eval(ctx, input, s.snap.EvaluatedAt.AsTime(), s.plan)
			if err != nil {
				r.fail(SectionPolicies, s.item, "snapshot %s does not re-evaluate: %v", s.snap.SnapshotId, err)
				continue
			}
			if why := sameDecision(got, s.snap, input); why != "" {
				r.fail(SectionPolicies, s.item, "snapshot %s re-evaluates differently under revision %s: %s", s.snap.SnapshotId, s.snap.BundleRevision, why)
				continue
			}
			r.Reevaluated++
		}
	}
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
// to a model turns any decision into a deny with only such reasons. The
// risk tier is policy's, never below the contract's.
func sameDecision(got Decision, s *stewardv1.PolicySnapshot, input []byte) string {
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
