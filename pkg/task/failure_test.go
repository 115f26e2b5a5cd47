package task_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// dispatchedAction is a permitted, claimed action on its first attempt.
func dispatchedAction(id string) []event.Payload {
	return []event.Payload{
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ActionHash: "h" + id, RequestHash: "r" + id, Tool: "charge", Target: "card"}},
		&stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p" + id, ActionId: id, ActionHash: "h" + id, RequestHash: "r" + id}},
		&stewardv1.ActionClaimed{ActionId: id, PermitId: "p" + id, Worker: "w1"},
		&stewardv1.ActionDispatched{ActionId: id, Attempt: 1, Worker: "w1"},
	}
}

func fold(t *testing.T, steps ...[]event.Payload) (*stewardv1.Task, error) {
	t.Helper()
	all := []event.Payload{created(), started()}
	for _, s := range steps {
		all = append(all, s...)
	}
	return task.Fold(stewardtest.History(t, "t1", all...))
}

func one(p ...event.Payload) []event.Payload { return p }

func TestRetryWaitsAndDispatchesTheNextAttempt(t *testing.T) {
	until := timestamppb.New(time.Now().Add(time.Minute))
	tk, err := fold(t, dispatchedAction("a1"), one(
		&stewardv1.ActionWaiting{ActionId: "a1", Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: until, NextAttempt: 2, Reason: "503"},
	))
	if err != nil {
		t.Fatal(err)
	}
	a := tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_WAITING || a.WaitKind != stewardv1.WaitKind_WAIT_KIND_RETRY || a.Attempt != 1 {
		t.Fatalf("action %v", a)
	}
	if len(tk.Progress.Remaining) != 1 {
		t.Errorf("progress %v: a waiting action remains", tk.Progress)
	}
	tk, err = fold(t, dispatchedAction("a1"), one(
		&stewardv1.ActionWaiting{ActionId: "a1", Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: until, NextAttempt: 2},
		&stewardv1.ActionDispatched{ActionId: "a1", Attempt: 2, Worker: "w2"},
		&stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 2}},
	))
	if err != nil {
		t.Fatal(err)
	}
	a = tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.Attempt != 2 || a.ClaimedBy != "w2" || a.WaitUntil != nil {
		t.Fatalf("action %v", a)
	}
	if len(tk.Progress.Done) != 1 || tk.Progress.Done[0] != "a1" {
		t.Errorf("progress %v", tk.Progress)
	}
}

func TestOneDispatchPerAttempt(t *testing.T) {
	for name, next := range map[string]event.Payload{
		"a second dispatch of attempt 1":         &stewardv1.ActionDispatched{ActionId: "a1", Attempt: 1, Worker: "w2"},
		"attempt 3 after 1":                      &stewardv1.ActionDispatched{ActionId: "a1", Attempt: 3},
		"a breaker wait for a dispatched action": &stewardv1.ActionWaiting{ActionId: "a1", Kind: stewardv1.WaitKind_WAIT_KIND_BREAKER, NextAttempt: 2},
		"a settlement of a known outcome":        &stewardv1.ActionSettled{ActionId: "a1", State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, SettledBy: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := fold(t, dispatchedAction("a1"), one(next)); err == nil {
				t.Fatal("folded; want a refusal")
			}
		})
	}
}

func TestUnknownOutcomeMakesTheTaskReconcile(t *testing.T) {
	unknown := &stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, Attempt: 1}}
	tk, err := fold(t, dispatchedAction("a1"), one(unknown))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RECONCILING || !strings.Contains(tk.StatusReason, "a1") {
		t.Fatalf("task %v (%s)", tk.Status, tk.StatusReason)
	}
	// The task's other work goes on while it reconciles.
	if _, err := fold(t, dispatchedAction("a1"), one(unknown), dispatchedAction("a2")); err != nil {
		t.Fatalf("a reconciling task refused other work: %v", err)
	}

	notAccepted := &stewardv1.ActionSettled{ActionId: "a1", State: stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED, SettledBy: "status query"}
	tk, err = fold(t, dispatchedAction("a1"), one(unknown, notAccepted))
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; a.Status != stewardv1.ActionStatus_ACTION_STATUS_WAITING || !a.Redispatched || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("after not accepted: task %v, action %v", tk.Status, a)
	}
	// One more dispatch, with the same key; not accepted again is refused.
	_, err = fold(t, dispatchedAction("a1"), one(unknown, notAccepted,
		&stewardv1.ActionDispatched{ActionId: "a1", Attempt: 2},
		&stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, Attempt: 2}},
		notAccepted,
	))
	if err == nil {
		t.Fatal("a second not-accepted folded; want a refusal")
	}

	tk, err = fold(t, dispatchedAction("a1"), one(unknown,
		&stewardv1.ActionSettled{ActionId: "a1", State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, SettledBy: "user:ops", Reason: "seen", ResultRef: "sha256:x"}))
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.SettledBy != "user:ops" || a.Outcome.ResultRef != "sha256:x" || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("after settling: task %v, action %v", tk.Status, a)
	}
}

func TestCompensationUndoesInOrderThenEnds(t *testing.T) {
	ok := func(id string) []event.Payload {
		return append(dispatchedAction(id), &stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1}})
	}
	comp := &stewardv1.TaskCompensating{Reason: "failed", FinalStatus: stewardv1.TaskStatus_TASK_STATUS_FAILED, ActionIds: []string{"a2", "a1"}}
	tk, err := fold(t, ok("a1"), ok("a2"), one(comp))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_COMPENSATING || strings.Join(tk.Compensations, ",") != "a2,a1" {
		t.Fatalf("task %v, compensations %v", tk.Status, tk.Compensations)
	}
	// A new action is refused; a compensation is taken.
	if _, err := fold(t, ok("a1"), ok("a2"), one(comp), dispatchedAction("a3")); err == nil {
		t.Error("a compensating task took a new action")
	}
	undo := func(id, of string) []event.Payload {
		steps := ok(id)
		steps[0].(*stewardv1.ActionProposed).Action.Compensates = of
		return steps
	}
	tk, err = fold(t, ok("a1"), ok("a2"), one(comp), undo("c2", "a2"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tk.Compensations, ",") != "a1" {
		t.Fatalf("after undoing a2: compensations %v", tk.Compensations)
	}
	tk, err = fold(t, ok("a1"), ok("a2"), one(comp), undo("c2", "a2"), undo("c1", "a1"), one(&stewardv1.TaskFailed{Reason: "compensated 2 actions"}))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_FAILED || len(tk.Compensations) != 0 {
		t.Fatalf("task %v, compensations %v", tk.Status, tk.Compensations)
	}
	if _, err := fold(t, ok("a1"), one(&stewardv1.TaskCompensating{FinalStatus: stewardv1.TaskStatus_TASK_STATUS_FAILED, ActionIds: []string{"nope"}})); err == nil {
		t.Error("compensating an action that did not succeed folded")
	}
}

func TestGuardsStopAndResumeTheTask(t *testing.T) {
	tk, err := fold(t, one(&stewardv1.TaskNeedsInput{Reason: "needs help"}))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT {
		t.Fatalf("task %v", tk.Status)
	}
	if _, err := fold(t, one(&stewardv1.TaskNeedsInput{}), dispatchedAction("a1")); err == nil {
		t.Error("a task waiting for input took a new action")
	}
	for _, stop := range []event.Payload{&stewardv1.TaskNeedsInput{}, &stewardv1.TaskSuspended{}} {
		tk, err := fold(t, one(stop, &stewardv1.TaskResumed{}))
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
			t.Errorf("after %T and a resume: %v", stop, tk.Status)
		}
	}
}

func TestStallMarkIsClearedByTheNextEvent(t *testing.T) {
	quiet := timestamppb.New(time.Now().Add(-time.Hour))
	tk, err := fold(t, dispatchedAction("a1"), one(&stewardv1.TaskStalled{Reason: "silent", QuietSince: quiet}))
	if err != nil {
		t.Fatal(err)
	}
	if tk.StalledSince == nil || tk.StalledReason != "silent" || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("stall mark %v %q, status %v", tk.StalledSince, tk.StalledReason, tk.Status)
	}
	tk, err = fold(t, dispatchedAction("a1"), one(&stewardv1.TaskStalled{Reason: "silent", QuietSince: quiet}, &stewardv1.ActionHeartbeat{ActionId: "a1", Attempt: 1, Beat: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if tk.StalledSince != nil || tk.Actions[0].LastHeartbeat == nil {
		t.Fatalf("after a heartbeat: stall mark %v, heartbeat %v", tk.StalledSince, tk.Actions[0].LastHeartbeat)
	}
}

func TestActionCapIsAGuard(t *testing.T) {
	c := created()
	c.(*stewardv1.TaskCreated).Contract.Limits = &stewardv1.TaskLimits{MaxActions: 1}
	_, err := task.Fold(stewardtest.History(t, "t1", append([]event.Payload{c, started()}, append(dispatchedAction("a1"), dispatchedAction("a2")...)...)...))
	if err == nil || !strings.Contains(err.Error(), "max_actions") {
		t.Fatalf("a second action past a cap of 1: %v", err)
	}
}

// TestCompensatingTaskStartsNothingOfItsOwn checks that while a task is
// being undone its own actions are neither permitted, claimed nor
// dispatched, that a refusal can end a waiting one, and that a reversible
// write in flight when the compensation began joins the list if it
// succeeds.
func TestCompensatingTaskStartsNothingOfItsOwn(t *testing.T) {
	reversible := func(id string) []event.Payload {
		steps := dispatchedAction(id)
		steps[0].(*stewardv1.ActionProposed).Action.EffectClass = stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE
		return steps
	}
	done := func(id string) event.Payload {
		return &stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1}}
	}
	comp := &stewardv1.TaskCompensating{FinalStatus: stewardv1.TaskStatus_TASK_STATUS_CANCELLED, ActionIds: []string{"a1"}}
	// a2 was permitted before the compensation began: no claim after.
	permitted := reversible("a2")[:3]
	if _, err := fold(t, reversible("a1"), one(done("a1")), permitted, one(comp, &stewardv1.ActionClaimed{ActionId: "a2", PermitId: "pa2", Worker: "w"})); err == nil {
		t.Error("an action of a compensating task was claimed")
	}
	// a2 was dispatched before, and succeeds after: it is undone first.
	tk, err := fold(t, reversible("a1"), one(done("a1")), reversible("a2"), one(comp, done("a2")))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tk.Compensations, ","); got != "a2,a1" {
		t.Errorf("compensations %q, want a2,a1", got)
	}
	// A waiting action may be refused before its next dispatch.
	_, err = fold(t, dispatchedAction("a3"), one(
		&stewardv1.ActionWaiting{ActionId: "a3", Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: timestamppb.Now(), NextAttempt: 2},
		&stewardv1.ActionOutcomeRecorded{ActionId: "a3", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC}},
	))
	if err != nil {
		t.Errorf("a refusal of a waiting action: %v", err)
	}
}

// TestStallMarkOnAPendingTask marks a task that was never started: the
// mark is legal and keeps it pending, and its start clears the mark; a
// paused task, which waits for a person, may not be marked.
func TestStallMarkOnAPendingTask(t *testing.T) {
	quiet := timestamppb.New(time.Now().Add(-time.Minute))
	mark := &stewardv1.TaskStalled{Reason: "not started", QuietSince: quiet}
	tk, err := task.Fold(stewardtest.History(t, "t1", created(), mark))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING || tk.StalledSince == nil {
		t.Fatalf("status %v, stalled since %v: want pending and marked", tk.Status, tk.StalledSince)
	}
	tk, err = task.Fold(stewardtest.History(t, "t1", created(), mark, started()))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || tk.StalledSince != nil {
		t.Fatalf("after the start: status %v, stalled since %v", tk.Status, tk.StalledSince)
	}
	if _, err := task.Fold(stewardtest.History(t, "t1", created(), &stewardv1.TaskPaused{}, mark)); err == nil {
		t.Error("a paused task was marked stalled")
	}
}
