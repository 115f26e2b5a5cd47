package task_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

func recorded(id string, provenance stewardv1.Provenance, tokens int64, cites ...string) event.Payload {
	return &stewardv1.DecisionRecorded{Decision: &stewardv1.Decision{DecisionId: id, ContextIds: cites,
		Call: &stewardv1.ModelCall{Provider: "openai", ModelId: "m", TokensIn: tokens, Provenance: provenance}}}
}

func attached(id string) event.Payload {
	return &stewardv1.ContextAttached{Item: &stewardv1.ContextItem{ContextId: id, Uri: "https://x/" + id, Digest: "sha256:00"}}
}

// TestFoldRecordsDecisions: the fold keeps decisions and the context
// ledger in order, notes each citation on its item, charges a reported
// call's tokens and not an observed one's, and refuses a repeated id, a
// citation of an item the ledger lacks, and either on an ended task.
func TestFoldRecordsDecisions(t *testing.T) {
	reported, observed := stewardv1.Provenance_PROVENANCE_REPORTED, stewardv1.Provenance_PROVENANCE_OBSERVED
	got, err := task.Fold(stewardtest.History(t, "t1", created(), started(), attached("c1"),
		recorded("d1", reported, 100, "c1"), recorded("d2", observed, 50, "c1")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Decisions) != 2 || got.BudgetUsed.GetTokens() != 100 || len(got.ContextItems[0].CitedBy) != 2 {
		t.Fatalf("decisions %d, tokens %d, cited by %v", len(got.Decisions), got.BudgetUsed.GetTokens(), got.ContextItems[0].CitedBy)
	}
	for name, events := range map[string][]event.Payload{
		"a repeated decision":         {created(), started(), recorded("d1", reported, 1), recorded("d1", reported, 1)},
		"a citation of nothing":       {created(), started(), recorded("d1", reported, 1, "c9")},
		"a repeated context item":     {created(), started(), attached("c1"), attached("c1")},
		"a decision on an ended task": {created(), started(), cancelled(), recorded("d1", reported, 1)},
		"context on an ended task":    {created(), started(), cancelled(), attached("c1")},
	} {
		if _, err := task.Fold(stewardtest.History(t, "t1", events...)); err == nil {
			t.Errorf("%s was folded", name)
		}
	}
}

// TestForkStateLeavesOutWhatIsOpen: ForkState carries the ledger,
// decisions and context of the parent at the fork, withdraws an action
// still open there with its approval and permit, and keeps none of the
// parent's own identity, spending or plan; the fold of a fork's
// TaskCreated starts from it.
func TestForkStateLeavesOutWhatIsOpen(t *testing.T) {
	open := &stewardv1.Action{ActionId: "a1", Status: stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL,
		Approval: &stewardv1.Approval{ApprovalId: "ap1"}, Permit: &stewardv1.ActionPermit{PermitId: "p1"}}
	done := &stewardv1.Action{ActionId: "a2", Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED}
	parent := &stewardv1.Task{Contract: &stewardv1.TaskContract{TaskId: "p"}, Status: stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL,
		Actions: []*stewardv1.Action{open, done}, Decisions: []*stewardv1.Decision{{DecisionId: "d1"}},
		ContextItems: []*stewardv1.ContextItem{{ContextId: "c1"}}, BudgetUsed: &stewardv1.BudgetUsage{Tokens: 9},
		Plan: &stewardv1.PlanState{Version: 1}, EventCount: 12, LastSequence: 40, CreatedAt: timestamppb.New(time.Now())}
	s := task.ForkState(parent)
	if a := s.Actions[0]; a.Status != stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN || a.Approval != nil || a.Permit != nil {
		t.Fatalf("the open action: %v", a)
	}
	carried := proto.CloneOf(done)
	carried.Carried = true
	if !s.Actions[0].Carried || !proto.Equal(s.Actions[1], carried) || len(s.Decisions) != 1 || len(s.ContextItems) != 1 {
		t.Fatalf("what carries over: %v", s)
	}
	if s.Contract != nil || s.BudgetUsed != nil || s.Plan != nil || s.EventCount != 0 || s.CreatedAt != nil || s.Status != 0 {
		t.Fatalf("the parent's own came over: %v", s)
	}
	if parent.Actions[0].Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
		t.Fatalf("ForkState changed the parent")
	}
	k := &stewardv1.TaskContract{Intent: "i"}
	fork := &stewardv1.TaskCreated{Contract: k, Fork: &stewardv1.ForkOrigin{ParentTaskId: "p", AtSequence: 40, State: s}}
	got, err := task.Fold(stewardtest.History(t, "f1", fork))
	if err != nil {
		t.Fatal(err)
	}
	if got.ForkedFrom.GetParentTaskId() != "p" || got.ForkedFrom.State != nil || len(got.Actions) != 2 || got.EventCount != 1 ||
		got.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING || got.Contract.TaskId != "f1" {
		t.Fatalf("the fork folded: %v", got)
	}
	// The fork never undoes its parent's work.
	_, err = task.Fold(stewardtest.History(t, "f1", fork, &stewardv1.TaskStarted{},
		&stewardv1.TaskCompensating{Reason: "r", FinalStatus: stewardv1.TaskStatus_TASK_STATUS_FAILED, ActionIds: []string{"a2"}}))
	if err == nil || !strings.Contains(err.Error(), "carried into the fork") {
		t.Fatalf("a fork compensating its parent's action: %v", err)
	}
}
