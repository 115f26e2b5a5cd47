package state_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// serveState starts a state plane over env's log behind the real edge
// interceptor, and returns clients for its query and audit services.
func serveState(t *testing.T, env *stewardtest.Env) (stewardv1connect.QueryServiceClient, stewardv1connect.AuditServiceClient) {
	t.Helper()
	url := serveStateURL(t, env)
	return stewardv1connect.NewQueryServiceClient(http.DefaultClient, url), stewardv1connect.NewAuditServiceClient(http.DefaultClient, url)
}

// serveStateURL serves a state plane over env and returns its URL.
func serveStateURL(t *testing.T, env *stewardtest.Env) string {
	t.Helper()
	p := startPlane(t, env.Log, env.Logger, state.Config{})
	mux := http.NewServeMux()
	for _, s := range p.Services(rpc.HandlerOptions(env.Logger, nil, nil)) {
		mux.Handle(s.Path, s.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// act returns the ledger steps that take a proposed action id through an
// allow by policy revision rev to its first dispatch.
func act(id, tool, target, rev string) []event.Payload {
	return []event.Payload{
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ProposalId: "p-" + id, Tool: tool, ToolVersion: "1.0.0", Target: target, ActionHash: "h-" + id, RequestHash: "r-" + id, OpKey: "op-" + id}},
		&stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-" + id, BundleRevision: rev, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm-" + id, ActionId: id, ActionHash: "h-" + id, RequestHash: "r-" + id}},
		&stewardv1.ActionClaimed{ActionId: id, PermitId: "pm-" + id, Worker: "w1"},
		&stewardv1.ActionDispatched{ActionId: id, Attempt: 1, Worker: "w1"},
	}
}

func succeededOutcome(id string, attempt uint32) *stewardv1.ActionOutcomeRecorded {
	return &stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, ResultRef: "results/" + id, ResultHash: "sha-" + id, Attempt: attempt,
	}}
}

func running() []event.Payload {
	k := contract(1)
	k.InputSnapshot = &stewardv1.InputSnapshot{Version: "inputs-v7"}
	return []event.Payload{&stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{}}
}

// eventful is a running task whose two actions both succeeded in the end:
// act-1 after a transient failure and a retry; act-2 after a person's
// approval, a fresh evaluation under a newer policy revision, an unknown
// outcome and its settlement by the tool's status query.
func eventful() []event.Payload {
	h := running()
	h = append(h, act("act-1", "search", "acct:42|main", "rev-A")...)
	h = append(h,
		&stewardv1.ActionWaiting{ActionId: "act-1", Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Reason: "attempt 1 of 3 failed: 503 Service Unavailable"},
		&stewardv1.ActionDispatched{ActionId: "act-1", Attempt: 2, Worker: "w2"},
		succeededOutcome("act-1", 2),
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "act-2", ProposalId: "p-act-2", Tool: "wire", ToolVersion: "1.0.0", Target: "acct:7", ActionHash: "h-act-2", RequestHash: "r-act-2"}},
		&stewardv1.PolicyEvaluated{ActionId: "act-2", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-act-2a", BundleRevision: "rev-A", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "apv-1", ActionId: "act-2", ActionHash: "h-act-2", RequiredRoles: []string{"authorizer"}}},
		&stewardv1.ApprovalDecided{ApprovalId: "apv-1", ActionId: "act-2", ActionHash: "h-act-2", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:bo", Comment: "ok | for the quarter\n*not* more"},
		&stewardv1.PolicyEvaluated{ActionId: "act-2", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-act-2b", BundleRevision: "rev-B", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm-act-2", ActionId: "act-2", ActionHash: "h-act-2", RequestHash: "r-act-2"}},
		&stewardv1.ActionClaimed{ActionId: "act-2", PermitId: "pm-act-2", Worker: "w1"},
		&stewardv1.ActionDispatched{ActionId: "act-2", Attempt: 1, Worker: "w1"},
		&stewardv1.ActionOutcomeRecorded{ActionId: "act-2", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, Reason: "no answer within 30s", Attempt: 1}},
		&stewardv1.ActionSettled{ActionId: "act-2", State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, ResultRef: "results/act-2", ResultHash: "sha-act-2", SettledBy: "status query"},
	)
	return h
}

func getReceipt(t *testing.T, q stewardv1connect.QueryServiceClient, id string) *stewardv1.GetReceiptResponse {
	t.Helper()
	resp, err := q.GetReceipt(context.Background(), connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: id}))
	if err != nil {
		t.Fatalf("GetReceipt %s: %v", id, err)
	}
	return resp.Msg
}

// TestReceiptTellsWhatHappened builds a receipt of a task with a retry,
// an approval, two policy revisions and a settled unknown outcome, and
// checks every part against the history, the footer against VerifyTask's
// head, and that rendering is stable.
func TestReceiptTellsWhatHappened(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ctx := context.Background()
	history := eventful()
	env.Append("rcpt", history...)
	q, a := serveState(t, env)
	got := getReceipt(t, q, "rcpt")
	r := got.Receipt

	recs, err := env.Log.Read(ctx, "rcpt")
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	v, err := a.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: "rcpt"}))
	if err != nil {
		t.Fatal(err)
	}
	if r.EventCount != uint32(len(history)) || r.EventCount != v.Msg.EventCount || r.LastSequence != last.Sequence ||
		r.LastEventHash != hex.EncodeToString(last.Event.Hash) || r.LastEventHash != hex.EncodeToString(v.Msg.HeadHash) {
		t.Fatalf("receipt covers %d events up to %d (%s); the log has %d up to %d (%x), VerifyTask head %x",
			r.EventCount, r.LastSequence, r.LastEventHash, len(recs), last.Sequence, last.Event.Hash, v.Msg.HeadHash)
	}

	if r.TaskId != "rcpt" || r.Intent != "task 1" || r.InputVersion != "inputs-v7" || r.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Errorf("header: %v %q %q %v", r.TaskId, r.Intent, r.InputVersion, r.Status)
	}
	if r.Partial {
		t.Errorf("a running task whose actions all succeeded is not partial")
	}
	if len(r.Calls) != 2 {
		t.Fatalf("calls: %v", r.Calls)
	}
	c1, c2 := r.Calls[0], r.Calls[1]
	if c1.ActionId != "act-1" || c1.Tool != "search" || c1.ToolVersion != "1.0.0" || c1.Attempts != 2 || c1.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED ||
		c1.ResultRef != "results/act-1" || c1.ResultHash != "sha-act-1" || c1.PolicyRevision != "rev-A" || c1.OpKey != "op-act-1" || c1.ApprovedBy != "" {
		t.Errorf("call 1: %v", c1)
	}
	if c2.ActionId != "act-2" || c2.Attempts != 1 || c2.ApprovedBy != "user:bo" || c2.SettledBy != "status query" || c2.PolicyRevision != "rev-B" ||
		c2.SnapshotId != "s-act-2b" || c2.ResultRef != "results/act-2" || c2.FinishedAt == nil {
		t.Errorf("call 2: %v", c2)
	}
	if r.Retries != 1 {
		t.Errorf("retries = %d, want 1", r.Retries)
	}
	if len(r.Errors) != 2 || !strings.Contains(r.Errors[0], "act-1 (search) attempt 1 failed (transient), retried: attempt 1 of 3 failed: 503") ||
		!strings.Contains(r.Errors[1], "act-2 (wire) attempt 1: outcome unknown") || !strings.Contains(r.Errors[1], "no answer within 30s") {
		t.Errorf("errors: %q", r.Errors)
	}
	if !slices.Equal(r.PolicyRevisions, []string{"rev-A", "rev-B"}) {
		t.Errorf("policy revisions %v, want [rev-A rev-B]", r.PolicyRevisions)
	}
	if len(r.Approvals) != 1 || r.Approvals[0].ApprovalId != "apv-1" || r.Approvals[0].DecidedBy != "user:bo" ||
		r.Approvals[0].Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE || r.Approvals[0].DecidedAt == nil {
		t.Errorf("approvals: %v", r.Approvals)
	}
	if len(r.Artifacts) != 0 || len(r.AcceptanceChecks) != 0 || len(r.AcceptanceRounds) != 0 {
		t.Errorf("no artifacts were submitted nor checks run, but the receipt has %v %v %v", r.Artifacts, r.AcceptanceChecks, r.AcceptanceRounds)
	}
	if r.BudgetUsed.GetTokens() != 0 || r.BudgetUsed.GetCostMicros() != 0 {
		t.Errorf("nothing was spent, but the receipt says %v", r.BudgetUsed)
	}
	if r.Elapsed == nil || r.Elapsed.AsDuration() != r.UpdatedAt.AsTime().Sub(r.CreatedAt.AsTime()) || r.Elapsed.AsDuration() <= 0 {
		t.Errorf("elapsed %v from %v to %v", r.Elapsed, r.CreatedAt, r.UpdatedAt)
	}

	md := got.Markdown
	t.Logf("\n%s", md)
	for _, want := range []string{
		"# Receipt: task `rcpt` — task 1",
		"- **Partial:** no",
		"| `act-1` | `search@1.0.0` | `acct:42\\|main` | succeeded | 2 | `results/act-1` hash `sha-act-1` | — |",
		"| `act-2` | `wire@1.0.0` | `acct:7` | succeeded | 1 | `results/act-2` hash `sha-act-2` | approved by user:bo; settled by status query |",
		"| approved | user:bo | ok \\| for the quarter \\*not\\* more |",
		"- `rev-A`\n- `rev-B`\n",
		"Retries (dispatches beyond each action's first): 1",
		"1. action act-1 (search) attempt 1 failed (transient), retried",
		"No artifacts were submitted.",
		"The task has not been marked produced.",
		"No credential was issued.",
		"inputs-v7",
		fmt.Sprintf("Covers events 1..%d of the task, last event at stream sequence %d, hash %x.", len(history), last.Sequence, v.Msg.HeadHash),
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown does not say %q", want)
		}
	}
	checkTables(t, md)
	if again := getReceipt(t, q, "rcpt"); again.Markdown != md {
		t.Errorf("the same history rendered differently:\n%s", again.Markdown)
	}
}

// TestReceiptPartial checks the partial rule: a task not accepted is
// partial when it stopped short (failed, cancelled, paused, waiting for
// input, suspended, compensating) or has actions that failed (denials and
// rejections included) or are unfinished.
func TestReceiptPartial(t *testing.T) {
	env := stewardtest.NewEnv(t)
	failing := append(running(), act("act-1", "wire", "acct:7", "rev-A")...)
	failing = append(failing, &stewardv1.ActionOutcomeRecorded{ActionId: "act-1", Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC, Reason: "account closed", Attempt: 1,
	}})
	denied := append(running(),
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "act-1", ProposalId: "p", Tool: "wire", ActionHash: "h", RequestHash: "r"}},
		&stewardv1.PolicyEvaluated{ActionId: "act-1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", BundleRevision: "rev-A", Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY}},
		&stewardv1.ActionDenied{ActionId: "act-1", SnapshotId: "s", Reasons: []string{"too risky"}})
	tests := []struct {
		name    string
		history []event.Payload
		partial bool
		errors  int
	}{
		{"pending", running()[:1], false, 0},
		{"running-all-done", append(append(running(), act("act-1", "search", "q", "rev-A")...), succeededOutcome("act-1", 1)), false, 0},
		{"running-in-flight", append(running(), act("act-1", "search", "q", "rev-A")...), true, 0},
		{"running-action-failed", failing, true, 1},
		{"running-action-denied", denied, true, 0},
		{"failed", append(slices.Clone(failing), &stewardv1.TaskFailed{Reason: "the wire failed"}), true, 1},
		{"failed-no-actions", append(running(), &stewardv1.TaskFailed{Reason: "gave up"}), true, 0},
		{"cancelled", append(running(), &stewardv1.TaskCancelled{}), true, 0},
		{"paused", append(running(), &stewardv1.TaskPaused{}), true, 0},
		{"needs-input", append(running(), &stewardv1.TaskNeedsInput{Reason: "same failure 3 times"}), true, 0},
		{"suspended", append(running(), &stewardv1.TaskSuspended{Reason: "approval waited too long"}), true, 0},
	}
	for _, tt := range tests {
		env.Append(tt.name, tt.history...)
	}
	q, _ := serveState(t, env)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := getReceipt(t, q, tt.name)
			r := got.Receipt
			if r.Partial != tt.partial {
				t.Errorf("partial = %v for a %s task, want %v", r.Partial, r.Status, tt.partial)
			}
			if strings.Contains(got.Markdown, "PARTIAL RECEIPT") != tt.partial {
				t.Errorf("the Markdown does not say partial = %v:\n%s", tt.partial, got.Markdown)
			}
			if len(r.Errors) != tt.errors {
				t.Errorf("errors %q, want %d", r.Errors, tt.errors)
			}
			if r.EventCount != uint32(len(tt.history)) {
				t.Errorf("event count %d, want %d", r.EventCount, len(tt.history))
			}
		})
	}
	r := getReceipt(t, q, "failed").Receipt
	if r.Errors[0] != "action act-1 (wire) attempt 1 failed (deterministic): account closed" || r.Calls[0].Reason != "account closed" ||
		r.Calls[0].FailureClass != stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC || r.StatusReason != "the wire failed" {
		t.Errorf("failed task: errors %q, call %v, reason %q", r.Errors, r.Calls[0], r.StatusReason)
	}
}

// TestReceiptBadInput: a missing or malformed task id is InvalidArgument
// naming task_id; an unknown task is NotFound.
func TestReceiptBadInput(t *testing.T) {
	q, _ := serveState(t, stewardtest.NewEnv(t))
	for id, want := range map[string]connect.Code{
		"":            connect.CodeInvalidArgument,
		"a.b":         connect.CodeInvalidArgument,
		"no-such-one": connect.CodeNotFound,
	} {
		_, err := q.GetReceipt(context.Background(), connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: id}))
		if connect.CodeOf(err) != want {
			t.Errorf("GetReceipt(%q) = %v, want %v", id, err, want)
		}
		if want == connect.CodeInvalidArgument && !strings.Contains(err.Error(), "task_id") {
			t.Errorf("GetReceipt(%q) = %v, does not name task_id", id, err)
		}
	}
}

// checkTables checks that every row of every table in md has as many
// cells as the table's header: escaping kept each value in its cell.
func checkTables(t *testing.T, md string) {
	t.Helper()
	cells := func(row string) int { return strings.Count(row, "|") - strings.Count(row, `\|`) }
	header := 0
	for _, l := range strings.Split(md, "\n") {
		switch {
		case !strings.HasPrefix(l, "|"):
			header = 0
		case header == 0:
			header = cells(l)
		case cells(l) != header:
			t.Errorf("row %q has %d cell separators, its header %d", l, cells(l), header)
		}
	}
}
