package state_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/state"
)

// TestAForksReceiptTellsOnlyItsOwnRounds: a parent produced once with an
// execution report and failed its criterion; a fork of it carries that
// round as state. The fork's receipt neither shows the parent agent's
// report as its own agent's account nor warns of the parent's failed
// check; it warns that its own criteria were never evaluated (found by
// review).
func TestAForksReceiptTellsOnlyItsOwnRounds(t *testing.T) {
	k := contract(1)
	k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "has-summary", Expression: `"summary" in artifacts`}}
	parent := stewardtest.History(t, "parent", &stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{},
		&stewardv1.TaskProduced{Round: 1, Checks: []*stewardv1.CriterionResult{{CriterionId: "has-summary", Passed: false}},
			Report: &stewardv1.ExecutionReport{Summary: "the parent's agent says all is done"}})
	pt, err := task.Fold(parent)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := state.BuildReceipt(parent); err != nil || r.AgentReport.GetSummary() == "" {
		t.Fatalf("the parent's own receipt: %v, %v", r.GetAgentReport(), err)
	}
	last := parent[len(parent)-1]
	fk := contract(2)
	fk.AcceptanceCriteria = k.AcceptanceCriteria
	fork := stewardtest.History(t, "fork", []event.Payload{&stewardv1.TaskCreated{Contract: fk, Fork: &stewardv1.ForkOrigin{
		ParentTaskId: "parent", AtSequence: last.Sequence, AtHash: last.Event.Hash, Reason: "again", State: task.ForkState(pt)}},
		&stewardv1.TaskStarted{}}...)
	r, found := warnedOf(t, fork)
	if r.AgentReport != nil || r.AgentReportRound != 0 {
		t.Errorf("the fork's receipt shows round %d's report, its parent agent's, as its own agent's account: %v", r.AgentReportRound, r.AgentReport)
	}
	if got := found[stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_CHECK_FAILED]; got != "" {
		t.Errorf("the fork warns of its parent's failed check %q: %v", got, r.Warnings)
	}
	if got := found[stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_CHECK_NOT_EVALUATED]; got != "contract.acceptance_criteria" {
		t.Errorf("the fork, never produced, does not warn that its criteria were not evaluated: %v", r.Warnings)
	}
}

// TestTheAgentsWordsCannotMakeTheReceiptsHeadings: what the agent says it
// left open is a list item; one that starts like a heading or a list
// stays the agent's words, not a heading of the receipt (found by review).
func TestTheAgentsWordsCannotMakeTheReceiptsHeadings(t *testing.T) {
	r, err := state.BuildReceipt(stewardtest.History(t, "words", &stewardv1.TaskCreated{Contract: contract(1)}, &stewardv1.TaskStarted{},
		&stewardv1.TaskProduced{Round: 1, Report: &stewardv1.ExecutionReport{Summary: "done",
			LeftOpen: []string{"## Accepted by its owner", "- nothing else", "+ truly", "1. first"}}}))
	if err != nil {
		t.Fatal(err)
	}
	md := state.ReceiptMarkdown(r)
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "- #") || strings.HasPrefix(line, "- -") || strings.HasPrefix(line, "- +") || strings.HasPrefix(line, "- 1.") {
			t.Errorf("the agent's words make Markdown of their own: %q", line)
		}
	}
	if !strings.Contains(md, `- \## Accepted by its owner`) {
		t.Errorf("the agent's open item is not shown, escaped:\n%s", md)
	}
}
