package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

const (
	transient    = stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT
	retryMode    = stewardv1.RecoveryMode_RECOVERY_MODE_RETRY
	escalateMode = stewardv1.RecoveryMode_RECOVERY_MODE_ESCALATE
)

// recoveringTask creates a task allowing the harness's tools under policy and
// limits, and waits until it runs.
func (r *harness) recoveringTask(t *testing.T, requestID string, policy *stewardv1.RecoveryPolicy, limits *stewardv1.TaskLimits) string {
	t.Helper()
	req := validRequest(requestID)
	req.Contract.AllowedTools = []string{"write", "undo", "search", "net"}
	req.Contract.RecoveryPolicy = policy
	req.Contract.Limits = limits
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	r.running(tk.Contract.TaskId)
	return tk.Contract.TaskId
}

// retryOf returns the action that retries id, or nil.
func retryOf(tk *stewardv1.Task, id string) *stewardv1.Action {
	for _, a := range tk.Actions {
		if a.RetryOf == id {
			return a
		}
	}
	return nil
}

// needsInput returns the task's last TaskNeedsInput event, or nil.
func (r *harness) needsInput(t *testing.T, taskID string) *stewardv1.Event {
	t.Helper()
	recs, err := r.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	var last *stewardv1.Event
	for _, rec := range recs {
		if rec.Event.GetTaskNeedsInput() != nil {
			last = rec.Event
		}
	}
	return last
}

func (r *harness) resume(t *testing.T, taskID string) {
	t.Helper()
	if _, err := r.ctl.ResumeTask(context.Background(), rpc.Identity{Principal: "user:a"}, &stewardv1.ResumeTaskRequest{TaskId: taskID, Reason: "go on"}); err != nil {
		t.Fatal(err)
	}
}

// TestRetryProposesATransientFailureAgain: under RECOVERY_MODE_RETRY a
// transient failure is proposed again, unchanged, by Steward, until
// max_attempts proposals in all have failed; each retry names the one it
// retries and its attempt. Only then does the loop guard stop the run of
// identical failures. A redelivery proposes nothing twice.
func TestRetryProposesATransientFailureAgain(t *testing.T) {
	r := newHarness(t)
	id := r.recoveringTask(t, "retry-3", &stewardv1.RecoveryPolicy{Mode: retryMode, MaxAttempts: 3}, nil)
	first := r.propose(t, id, "p", "net", "api", map[string]any{"n": 1})
	at := time.Now()
	chain := []*stewardv1.Action{first}
	for i := range 3 {
		a := chain[len(chain)-1]
		r.run(t, id, a.ActionId, failed(transient, "HTTP 503: busy"), nil, at.Add(time.Duration(i)*time.Second))
		r.settle()
		tk := r.task(t, id)
		next := retryOf(tk, a.ActionId)
		if i == 2 {
			if next != nil {
				t.Fatalf("a fourth proposal past max_attempts 3: %v", next)
			}
			break
		}
		if next == nil {
			t.Fatalf("attempt %d failed transiently and was not proposed again; task %s (%s)", i+1, tk.Status, tk.StatusReason)
		}
		if tk.Status != running {
			t.Fatalf("while retrying: %s (%s)", tk.Status, tk.StatusReason)
		}
		switch {
		case next.RecoveryAttempt != uint32(i+2):
			t.Errorf("retry %d has recovery_attempt %d", i+1, next.RecoveryAttempt)
		case next.RequestHash != first.RequestHash || next.Tool != first.Tool || next.ToolVersion != first.ToolVersion || next.Target != first.Target:
			t.Errorf("the retry is not the same request: %v", next)
		case !proto.Equal(next.RetryPolicy, first.RetryPolicy):
			t.Errorf("the retry runs under %v, the original under %v", next.RetryPolicy, first.RetryPolicy)
		case next.ProposedBy != "agent":
			t.Errorf("the retry is proposed by %q; want the original's proposer", next.ProposedBy)
		case next.OpKey == a.OpKey || next.ActionHash == a.ActionHash:
			t.Error("the retry shares the failed call's op_key or action hash")
		}
		chain = append(chain, next)
	}
	// The attempts are spent: the guard sees three identical failures.
	tk := r.task(t, id)
	if ni := r.needsInput(t, id).GetTaskNeedsInput(); tk.Status != waitingInput ||
		ni.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_SAME_FAILURES || ni.GetActionId() != chain[2].ActionId {
		t.Fatalf("after 3 failed attempts: %s (%s), %v; want waiting for input, same failures, on %s", tk.Status, tk.StatusReason, ni, chain[2].ActionId)
	}
	// The retries are Steward's on the log.
	recs, err := r.Log.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if p := rec.Event.GetActionProposed(); p != nil && p.Action.RetryOf != "" && rec.Event.Actor.GetPrincipal() != "steward" {
			t.Errorf("retry %s recorded by %q", p.Action.ActionId, rec.Event.Actor.GetPrincipal())
		}
	}
	before := r.count(t, id)
	r.redeliver(t)
	if after := r.count(t, id); after != before {
		t.Fatalf("redelivery appended %d events", after-before)
	}
}

// TestRetryLeavesOtherFailuresToTheAgent: a deterministic or validation
// failure, and a settled one, are not proposed again; nor is any failure
// without RECOVERY_MODE_RETRY.
func TestRetryLeavesOtherFailuresToTheAgent(t *testing.T) {
	r := newHarness(t)
	id := r.recoveringTask(t, "retry-some", &stewardv1.RecoveryPolicy{Mode: retryMode}, &stewardv1.TaskLimits{MaxSameFailures: 10})
	at := time.Now()
	var ids []string
	for i, o := range []*stewardv1.Outcome{failed(deterministic, "HTTP 404"), failed(stewardv1.FailureClass_FAILURE_CLASS_VALIDATION, "bad result")} {
		a := r.propose(t, id, "p"+string(rune('a'+i)), "net", "api", nil)
		r.run(t, id, a.ActionId, o, nil, at.Add(time.Duration(i)*time.Second))
		ids = append(ids, a.ActionId)
	}
	settled := r.propose(t, id, "settled", "net", "api", nil)
	r.dispatch(t, id, settled.ActionId)
	r.finish(t, id, settled.ActionId, &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN, Attempt: 1}, nil, at.Add(time.Minute))
	r.Append(id, &stewardv1.ActionSettled{ActionId: settled.ActionId, State: stewardv1.SettleState_SETTLE_STATE_FAILED, SettledBy: "user:ops", Reason: "the tool says no"})
	ids = append(ids, settled.ActionId)
	plain := r.recoveringTask(t, "no-retry", nil, nil)
	a := r.propose(t, plain, "p", "net", "api", nil)
	r.run(t, plain, a.ActionId, failed(transient, "HTTP 503"), nil, at)
	r.settle()
	tk := r.task(t, id)
	for _, f := range ids {
		if x := retryOf(tk, f); x != nil {
			t.Errorf("%s (%s) was proposed again", f, task.FindAction(tk, f).Outcome.GetReason())
		}
	}
	if len(tk.Actions) != 3 || tk.Status != running {
		t.Fatalf("%d actions, %s; want the 3 proposed, running", len(tk.Actions), tk.Status)
	}
	if n := len(r.task(t, plain).Actions); n != 1 {
		t.Fatalf("a task with no recovery mode has %d actions after a failure; want 1", n)
	}
}

// TestRetryWaitsForAStoppedTask: a failure that ends while the task is
// paused is not proposed again then, but when the task is resumed; an
// ended task gets no retry.
func TestRetryWaitsForAStoppedTask(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.recoveringTask(t, "retry-paused", &stewardv1.RecoveryPolicy{Mode: retryMode}, nil)
	a := r.propose(t, id, "p", "net", "api", nil)
	r.dispatch(t, id, a.ActionId)
	if _, err := r.ctl.PauseTask(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.PauseTaskRequest{TaskId: id}); err != nil {
		t.Fatal(err)
	}
	r.finish(t, id, a.ActionId, failed(transient, "HTTP 503"), nil, time.Now())
	r.settle()
	if x := retryOf(r.task(t, id), a.ActionId); x != nil {
		t.Fatal("a paused task got a retry")
	}
	r.resume(t, id)
	r.settle()
	if x := retryOf(r.task(t, id), a.ActionId); x == nil || x.RecoveryAttempt != 2 {
		t.Fatalf("after the resume the retry is %v", x)
	}

	ended := r.recoveringTask(t, "retry-ended", &stewardv1.RecoveryPolicy{Mode: retryMode}, nil)
	b := r.propose(t, ended, "p", "net", "api", nil)
	r.dispatch(t, ended, b.ActionId)
	if _, err := r.ctl.CancelTask(ctx, "user:a", &stewardv1.CancelTaskRequest{TaskId: ended}); err != nil {
		t.Fatal(err)
	}
	r.finish(t, ended, b.ActionId, failed(transient, "HTTP 503"), nil, time.Now())
	r.settle()
	if n := len(r.task(t, ended).Actions); n != 1 {
		t.Fatalf("an ended task has %d actions; want no retry", n)
	}
}

// TestRetryAtTheActionCap: a retry counts against max_actions; past it
// the task stops for input, and the resume that grants more actions
// proposes the retry it owed.
func TestRetryAtTheActionCap(t *testing.T) {
	r := newHarness(t)
	id := r.recoveringTask(t, "retry-cap", &stewardv1.RecoveryPolicy{Mode: retryMode, MaxAttempts: 2}, &stewardv1.TaskLimits{MaxActions: 1})
	a := r.propose(t, id, "p", "net", "api", nil)
	r.run(t, id, a.ActionId, failed(transient, "HTTP 503"), nil, time.Now())
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == waitingInput })
	if ni := r.needsInput(t, id).GetTaskNeedsInput(); ni.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ACTION_CAP || len(tk.Actions) != 1 {
		t.Fatalf("%v, %d actions; want stopped at the cap with the retry refused", ni, len(tk.Actions))
	}
	r.resume(t, id)
	r.settle()
	tk = r.task(t, id)
	if x := retryOf(tk, a.ActionId); x == nil || tk.ActionsGranted != 1 || tk.Status != running {
		t.Fatalf("after the resume: retry %v, %d granted, %s", x, tk.ActionsGranted, tk.Status)
	}
}

// TestEscalateStopsTheTask: under RECOVERY_MODE_ESCALATE a denial does
// nothing; a failure for good stops the task for input, naming the
// action; a resume lets it go on, and the next failure — an unknown
// outcome once it is settled failed — stops it again. Redelivery stops it
// once.
func TestEscalateStopsTheTask(t *testing.T) {
	r := newHarness(t)
	id := r.recoveringTask(t, "escalate", &stewardv1.RecoveryPolicy{Mode: escalateMode}, nil)
	// A denial is not a failure.
	denied := r.propose(t, id, "denied", "net", "api", nil)
	r.Append(id, &stewardv1.ActionDenied{ActionId: denied.ActionId, Reasons: []string{"not today"}})
	ok := r.propose(t, id, "ok", "net", "api", nil)
	r.run(t, id, ok.ActionId, succeeded(), nil, time.Now())
	if tk := r.task(t, id); tk.Status != running {
		t.Fatalf("after a denial and a success: %s (%s)", tk.Status, tk.StatusReason)
	}
	a := r.propose(t, id, "p", "net", "api", nil)
	r.run(t, id, a.ActionId, failed(deterministic, "HTTP 409: taken"), nil, time.Now())
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == waitingInput })
	ni := r.needsInput(t, id).GetTaskNeedsInput()
	if ni.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ESCALATED || ni.GetActionId() != a.ActionId ||
		!strings.Contains(tk.StatusReason, "HTTP 409: taken") || !strings.Contains(tk.StatusReason, a.ActionId) {
		t.Fatalf("stopped with %v (%s)", ni, tk.StatusReason)
	}
	before := r.count(t, id)
	r.redeliver(t)
	if after := r.count(t, id); after != before {
		t.Fatalf("redelivery appended %d events", after-before)
	}
	r.resume(t, id)
	// Nor, once resumed, does a redelivery of the failure stop it again.
	before = r.count(t, id)
	r.redeliver(t)
	if tk, after := r.task(t, id), r.count(t, id); after != before || tk.Status != running {
		t.Fatalf("redelivery after the resume: %d events appended, %s", after-before, tk.Status)
	}
	b := r.propose(t, id, "q", "net", "other", nil)
	r.dispatch(t, id, b.ActionId)
	r.finish(t, id, b.ActionId, &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN, Attempt: 1}, nil, time.Now())
	r.settle()
	if tk := r.task(t, id); tk.Status == waitingInput {
		t.Fatal("an unknown outcome escalated: it is not a failure")
	}
	r.Append(id, &stewardv1.ActionSettled{ActionId: b.ActionId, State: stewardv1.SettleState_SETTLE_STATE_FAILED, SettledBy: "user:ops", Reason: "no"})
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == waitingInput })
	if got := r.needsInput(t, id).GetTaskNeedsInput().GetActionId(); got != b.ActionId {
		t.Fatalf("the settled failure escalated naming %q, want %s", got, b.ActionId)
	}
	if n := r.Count(id, event.TypeTaskNeedsInput); n != 2 {
		t.Fatalf("%d stops; want 2", n)
	}
}

// TestActionCapStopsTheTask: the proposal past max_actions is refused and
// stops the task for input, once however often it is tried; a resume
// grants max_actions more, and the next cap stops it again.
func TestActionCapStopsTheTask(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.recoveringTask(t, "cap", nil, &stewardv1.TaskLimits{MaxActions: 2})
	propose := func(pid string) error {
		_, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: pid, Tool: "search"})
		return err
	}
	for _, pid := range []string{"a", "b"} {
		if err := propose(pid); err != nil {
			t.Fatal(err)
		}
	}
	if tk := r.task(t, id); tk.Status != running {
		t.Fatalf("at the cap, before anything past it: %s", tk.Status)
	}
	err := propose("c")
	if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "max_actions") {
		t.Fatalf("past the cap: %v", err)
	}
	tk := r.task(t, id)
	ni := r.needsInput(t, id).GetTaskNeedsInput()
	if tk.Status != waitingInput || ni.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ACTION_CAP || !strings.Contains(tk.StatusReason, "cap of 2 actions") {
		t.Fatalf("past the cap: %s (%s), %v", tk.Status, tk.StatusReason, ni)
	}
	if err := propose("c"); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("again past the cap: %v", err)
	}
	if err := propose("a"); err != nil {
		t.Fatalf("a repeat of a recorded proposal: %v", err)
	}
	if n := r.Count(id, event.TypeTaskNeedsInput); n != 1 {
		t.Fatalf("%d stops; want 1", n)
	}
	r.resume(t, id)
	for _, pid := range []string{"c", "d"} {
		if err := propose(pid); err != nil {
			t.Fatalf("after the resume: %v", err)
		}
	}
	if err := propose("e"); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("past the second cap: %v", err)
	}
	tk = r.task(t, id)
	if tk.Status != waitingInput || tk.ActionsGranted != 2 || !strings.Contains(tk.StatusReason, "cap of 4 actions") {
		t.Fatalf("past the second cap: %s (%s), %d granted", tk.Status, tk.StatusReason, tk.ActionsGranted)
	}
	// A resume of a task stopped for input while under its cap grants
	// nothing.
	other := r.recoveringTask(t, "under-cap", &stewardv1.RecoveryPolicy{Mode: escalateMode}, &stewardv1.TaskLimits{MaxActions: 2})
	a := r.propose(t, other, "p", "net", "api", nil)
	r.run(t, other, a.ActionId, failed(deterministic, "no"), nil, time.Now())
	r.WaitTask(other, func(tk *stewardv1.Task) bool { return tk.Status == waitingInput })
	r.resume(t, other)
	if tk := r.task(t, other); tk.ActionsGranted != 0 {
		t.Fatalf("a resume under the cap granted %d", tk.ActionsGranted)
	}
}

// TestRecoveryPolicyIsChecked: max_attempts is RETRY's only, and bounded;
// Steward's retry prefix is not a client's proposal id.
func TestRecoveryPolicyIsChecked(t *testing.T) {
	r := idleHarness(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		policy *stewardv1.RecoveryPolicy
	}{
		{"attempts without retry", &stewardv1.RecoveryPolicy{MaxAttempts: 2}},
		{"attempts with escalate", &stewardv1.RecoveryPolicy{Mode: escalateMode, MaxAttempts: 2}},
		{"too many attempts", &stewardv1.RecoveryPolicy{Mode: retryMode, MaxAttempts: control.MaxRecoveryAttempts + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := validRequest("")
			req.Contract.RecoveryPolicy = tc.policy
			_, _, err := r.ctl.CreateTask(ctx, "t", req)
			if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "contract.recovery_policy.max_attempts") {
				t.Fatalf("%v; want invalid, naming contract.recovery_policy.max_attempts", err)
			}
		})
	}
	req := validRequest("most")
	req.Contract.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: retryMode, MaxAttempts: control.MaxRecoveryAttempts}
	tk, _, err := r.ctl.CreateTask(ctx, "t", req)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: tk.Contract.TaskId, ProposalId: "recovery-x", Tool: "search"})
	if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "proposal_id") {
		t.Fatalf("a proposal id with Steward's retry prefix: %v", err)
	}
}
