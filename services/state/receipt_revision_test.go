package state_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/state"
)

// TestReceiptShowsEveryContractVersion: a task whose contract was revised
// mid-way shows both versions on its receipt, JSON and markdown — number,
// hash, reason, who proposed and approved, what changed — with each call
// under the version it was proposed under, and the revision that never
// took effect apart.
func TestReceiptShowsEveryContractVersion(t *testing.T) {
	const id = "task-revised"
	base := contract(1)
	base.TaskId, base.AccountableOwnerRef = id, stewardtest.Principal // the owner proposes: their approval
	revised := proto.CloneOf(base)
	revised.Intent = "task 1, in French"
	revised.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "fr", Expression: "size(artifacts) > 0"}}
	hash, err := task.ContractHash(revised)
	if err != nil {
		t.Fatal(err)
	}
	rejected := proto.CloneOf(revised)
	rejected.DesiredOutcome = "never mind"
	rejectedHash, _ := task.ContractHash(rejected)
	allow := &stewardv1.PolicySnapshot{SnapshotId: "rs", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}
	h := []event.Payload{
		&stewardv1.TaskCreated{Contract: base}, &stewardv1.TaskStarted{},
		act("act-1", "search", "index", "rev-A")[0],
		&stewardv1.ContractRevisionProposed{RevisionId: "rev-1", Version: 2, ContractHash: hash, Contract: revised, Reason: "the reader is French", ProposedBy: stewardtest.Principal},
		&stewardv1.ContractRevisionEvaluated{RevisionId: "rev-1", ContractHash: hash, Snapshot: allow},
		act("act-2", "search", "index-fr", "rev-A")[0],
		&stewardv1.ContractRevisionProposed{RevisionId: "rev-2", Version: 3, ContractHash: rejectedHash, Contract: rejected, Reason: "second thoughts", ProposedBy: stewardtest.Principal},
		&stewardv1.ContractRevisionEvaluated{RevisionId: "rev-2", ContractHash: rejectedHash, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "rs2", Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY, Reasons: []string{"no"}}},
	}
	r, err := state.BuildReceipt(stewardtest.History(t, id, h...))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.ContractVersions); n != 2 || r.ContractVersions[1].ContractHash != hash || r.ContractVersions[1].Reason != "the reader is French" ||
		strings.Join(r.ContractVersions[1].Changed, ",") != "intent,acceptance_criteria" || r.ContractVersions[0].Version != 1 {
		t.Fatalf("versions = %v, want 1 and 2 (bound to %s, changing intent and criteria)", r.ContractVersions, hash)
	}
	if r.Intent != "task 1, in French" {
		t.Errorf("intent %q, want the version in force", r.Intent)
	}
	for _, c := range r.Calls {
		want := map[string]uint32{"act-1": 1, "act-2": 2}[c.ActionId]
		if got := task.VersionOf(c.ContractVersion); got != want {
			t.Errorf("call %s under version %d, want %d", c.ActionId, got, want)
		}
	}
	if len(r.ContractRevisions) != 1 || r.ContractRevisions[0].RevisionId != "rev-2" || r.ContractRevisions[0].Contract != nil {
		t.Errorf("revisions not in force = %v, want rev-2 alone, without its contract", r.ContractRevisions)
	}
	for _, c := range []struct {
		i    int
		want string
	}{{3, "proposed version 2 of the contract (revision rev-1"}, {7, "said deny for contract revision rev-2: no"}} {
		if got := state.Summary(stewardtest.History(t, id, h...)[c.i].Event); !strings.Contains(got, c.want) {
			t.Errorf("the timeline says %q, want it to say %q", got, c.want)
		}
	}
	md := state.ReceiptMarkdown(r)
	for _, want := range []string{
		"## Contract versions",
		"| 1 | `" + r.ContractVersions[0].ContractHash + "` | created |",
		"| 2 | `" + hash + "` | the reader is French | intent, acceptance\\_criteria | test | test |",
		"`act-1` |", "`act-2` |", "`rev-2` | 3 |", "denied by policy: no",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
