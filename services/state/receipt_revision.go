package state

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// receiptContractVersions puts t's contract versions on r, and the
// revisions that never took effect, without their contracts; and the
// tool versions its rollouts assigned it (docs/rollouts.md): what the
// task ran under.
func receiptContractVersions(r *stewardv1.Receipt, t *stewardv1.Task) {
	r.RolloutAssignments = t.RolloutAssignments
	for _, v := range t.ContractVersions {
		r.ContractVersions = append(r.ContractVersions, proto.CloneOf(v))
	}
	for _, rv := range t.ContractRevisions {
		if rv.State == stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_APPROVED {
			continue // a version now, above
		}
		rv = proto.CloneOf(rv)
		rv.Contract = nil
		r.ContractRevisions = append(r.ContractRevisions, rv)
	}
}

// contractVersionsMarkdown renders every version of the contract that was
// in force, with the calls proposed under each, and the revisions that
// never took effect.
func contractVersionsMarkdown(w md, r *stewardv1.Receipt) {
	w.section("Contract versions")
	if len(r.ContractVersions) == 0 {
		w.line("The contract was never revised: version 1, the one the task was created with, was in force throughout.")
		return
	}
	calls := map[uint32][]string{}
	for _, c := range r.Calls {
		v := task.VersionOf(c.ContractVersion)
		calls[v] = append(calls[v], code(c.ActionId, true))
	}
	var rows [][]string
	for _, v := range r.ContractVersions {
		rows = append(rows, []string{fmt.Sprint(v.Version), code(v.ContractHash, true), orDash(text(v.Reason)),
			orDash(text(strings.Join(v.Changed, ", "))), orDash(text(v.ProposedBy)), orDash(text(strings.Join(v.ApprovedBy, ", "))),
			orDash(when(v.EffectiveAt)), orDash(strings.Join(calls[v.Version], ", "))})
	}
	w.table(">Version | Hash | Reason | Changed | Proposed by | Approved by | In force from | Calls proposed under it", rows)
	if len(r.ContractRevisions) == 0 {
		return
	}
	w.line("")
	w.line("Revisions that did not take effect:")
	w.line("")
	rows = nil
	for _, rv := range r.ContractRevisions {
		state := strings.ToLower(strings.TrimPrefix(rv.State.String(), "CONTRACT_REVISION_STATE_"))
		rows = append(rows, []string{code(rv.RevisionId, true), fmt.Sprint(rv.Version), code(rv.ContractHash, true), orDash(text(rv.Reason)),
			orDash(text(rv.ProposedBy)), state, orDash(text(rv.ClosedReason))})
	}
	w.table("Revision | >Version | Hash | Reason | Proposed by | State | Why", rows)
}

// revisionSummary tells a revision of the task's contract on the
// timeline, or "" for another event.
func revisionSummary(who string, ev *stewardv1.Event) string {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ContractRevisionProposed:
		x := p.ContractRevisionProposed
		return withReason(fmt.Sprintf("%s proposed version %d of the contract (revision %s, hash %.12s…)", who, x.Version, x.RevisionId, x.ContractHash), x.Reason)
	case *stewardv1.Event_ContractRevisionEvaluated:
		x := p.ContractRevisionEvaluated
		return withReason(fmt.Sprintf("Policy %s said %s for contract revision %s", shortRev(x.Snapshot.GetBundleRevision()), decisionName(x.Snapshot.GetDecision()), x.RevisionId),
			strings.Join(x.Snapshot.GetReasons(), "; "))
	case *stewardv1.Event_ContractRevisionDecided:
		d := p.ContractRevisionDecided.Decision
		verb := "rejected"
		if d.GetApprove() {
			verb = "approved"
		}
		as := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(d.GetCapacity().String(), "CONTRACT_REVISION_CAPACITY_"), "_", " "))
		return withReason(fmt.Sprintf("%s %s contract revision %s as %s", who, verb, p.ContractRevisionDecided.RevisionId, as), d.GetComment())
	}
	return ""
}
