package governance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance"
)

const (
	taskID     = "task-1"
	actionID   = "act-1"
	approvalID = "apv-1"
)

// awaitApproval writes the history of a running task whose one action
// waits for approval, asked for ago, with the given thresholds. It is
// written before the plane starts, so that the plane finds the action
// past the steps it would take itself. Timers come due in whole seconds:
// the thresholds are a second or two, and ago brings them closer.
func (e *harness) awaitApproval(t *testing.T, ago, remind, suspend time.Duration) {
	t.Helper()
	contract := &stewardv1.TaskContract{
		Intent: "pay", DesiredOutcome: "paid", RequesterRef: "user:a", AccountableOwnerRef: "user:a",
		Timers: &stewardv1.TaskTimers{ApprovalRemindAfter: durationpb.New(remind), ApprovalSuspendAfter: durationpb.New(suspend)},
	}
	for _, p := range []event.Payload{
		&stewardv1.TaskCreated{Contract: contract},
		&stewardv1.TaskStarted{},
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: actionID, ProposalId: "prop-1", Tool: "wire", ActionHash: "h", RequestHash: "r"}},
		&stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{
			ApprovalId: approvalID, TaskId: taskID, ActionId: actionID, ActionHash: "h",
			RequiredRoles: []string{"treasurer"}, RequestedAt: timestamppb.New(time.Now().Add(-ago)),
		}},
	} {
		e.Append(taskID, p)
	}
}

// waitTimersSet waits until both of the approval's timers are stored.
func (e *harness) waitTimersSet(t *testing.T) {
	t.Helper()
	e.waitTimers(t, "set", func(info *jetstream.StreamInfo) bool { return info.State.Msgs >= 2 })
}

// waitTimersHandled waits until both of the approval's timers have come
// due and the timer consumer, if a plane runs, has handled them: what they
// were going to do is on the log by then.
func (e *harness) waitTimersHandled(t *testing.T, running bool) {
	t.Helper()
	fired := e.Timers.Config().Prefix + ".governance.fired.>"
	e.waitTimers(t, "fired", func(info *jetstream.StreamInfo) bool { return len(info.State.Subjects) >= 2 }, jetstream.WithSubjectFilter(fired))
	if running {
		e.Bus.Settle(t, e.Timers.StreamOf(governance.PlaneName), governance.TimerConsumer)
		e.Settle(governance.PlaneName)
	}
}

func (e *harness) waitTimers(t *testing.T, what string, ok func(*jetstream.StreamInfo) bool, opts ...jetstream.StreamInfoOpt) {
	t.Helper()
	ctx := context.Background()
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		s, err := e.JS.Stream(ctx, e.Timers.StreamOf(governance.PlaneName))
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return ok(info), fmt.Sprintf("the approval's timers are not %s: %d messages", what, info.State.Msgs)
	})
}

// checkRemindedAndSuspendedOnce waits for the reminder and the
// suspension, then checks that each happened once.
func (e *harness) checkRemindedAndSuspendedOnce(t *testing.T) {
	t.Helper()
	e.waitCounts(t, taskID, func(n map[string]int, _ *stewardv1.Task) bool {
		return n[event.TypeApprovalReminded] > 0 && n[event.TypeTaskSuspended] > 0
	})
	// A duplicate would come from a timer or a reaction delivered again:
	// once both consumers are past everything, none is coming.
	e.waitTimersHandled(t, true)
	n := e.counts(t, taskID)
	if n[event.TypeApprovalReminded] != 1 || n[event.TypeTaskSuspended] != 1 {
		t.Fatalf("reminded %d times, suspended %d times; want once each", n[event.TypeApprovalReminded], n[event.TypeTaskSuspended])
	}
	if got := e.notified(); len(got) != 1 || got[0] != approvalID {
		t.Errorf("notified about %v, want [%s] once", got, approvalID)
	}
	recs, err := e.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range recs {
		switch ev := r.Event; ev.Type {
		case event.TypeApprovalReminded:
			order = append(order, ev.Type)
			if ev.Actor.GetPlane() != governance.PlaneName || ev.GetApprovalReminded().GetWaited().AsDuration() < time.Second {
				t.Errorf("reminder %v: want the governance plane and a wait of at least 1s", ev)
			}
		case event.TypeTaskSuspended:
			order = append(order, ev.Type)
			if r := ev.GetTaskSuspended().Reason; !strings.Contains(r, "approval "+approvalID+" for action "+actionID+" waited longer than 2s") {
				t.Errorf("suspension reason %q", r)
			}
		}
	}
	if strings.Join(order, " ") != event.TypeApprovalReminded+" "+event.TypeTaskSuspended {
		t.Errorf("order %v: want the reminder, then the suspension", order)
	}
	tk, _, err := e.Tasks.Load(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_SUSPENDED {
		t.Errorf("task is %v, want suspended", tk.Status)
	}
	if a := task.FindAction(tk, actionID); a.Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
		t.Errorf("action is %v; a suspension leaves the approval open", a.Status)
	}
}

func TestWaitingApprovalRemindsThenSuspends(t *testing.T) {
	e := newHarness(t)
	// The reminder is due now, the suspension a second later.
	e.awaitApproval(t, time.Second, time.Second, 2*time.Second)
	e.start(t, withoutSigner)
	e.checkRemindedAndSuspendedOnce(t)
}

func TestDecidedApprovalFiresNothing(t *testing.T) {
	e := newHarness(t)
	e.awaitApproval(t, 0, 2*time.Second, 3*time.Second)
	e.start(t, withoutSigner)
	e.waitTimersSet(t)
	e.Append(taskID, &stewardv1.ApprovalDecided{
		ApprovalId: approvalID, ActionId: actionID, ActionHash: "h",
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT, DecidedBy: "user:t",
	})
	e.waitTimersHandled(t, true)
	n := e.counts(t, taskID)
	if n[event.TypeApprovalReminded] != 0 || n[event.TypeTaskSuspended] != 0 || len(e.notified()) != 0 {
		t.Fatalf("a decided approval reminded %d times and suspended %d times (notified %v); want neither",
			n[event.TypeApprovalReminded], n[event.TypeTaskSuspended], e.notified())
	}
}

// TestApprovalTimersSurviveRestart sets the timers, stops the plane before
// either fires, lets both come due with no plane running, and starts a new
// plane on the same log: each fires once.
func TestApprovalTimersSurviveRestart(t *testing.T) {
	e := newHarness(t)
	e.awaitApproval(t, 0, time.Second, 2*time.Second)
	e.start(t, withoutSigner)
	e.waitTimersSet(t)
	e.plane.Stop()
	e.waitTimersHandled(t, false)
	if n := e.counts(t, taskID); n[event.TypeApprovalReminded] != 0 || n[event.TypeTaskSuspended] != 0 {
		t.Fatalf("timers acted with no plane running: %v", n)
	}
	e.start(t, withoutSigner)
	e.checkRemindedAndSuspendedOnce(t)
}

// TestSuspensionDueWhilePausedComesOnResume pauses the task before the
// approval's suspension comes due: the timer leaves a held task alone, and
// the resume brings the suspension.
func TestSuspensionDueWhilePausedComesOnResume(t *testing.T) {
	e := newHarness(t)
	// Both timers are due now.
	e.awaitApproval(t, 2*time.Second, time.Second, 2*time.Second)
	e.Append(taskID, &stewardv1.TaskPaused{Reason: "held"})
	e.start(t, withoutSigner)
	e.waitTimersHandled(t, true)
	if n := e.counts(t, taskID); n[event.TypeApprovalReminded] != 1 || n[event.TypeTaskSuspended] != 0 {
		t.Fatalf("events %v: want the reminder, and no suspension of a paused task", n)
	}
	e.Append(taskID, &stewardv1.TaskResumed{Reason: "back"})
	e.waitCounts(t, taskID, func(n map[string]int, tk *stewardv1.Task) bool {
		return n[event.TypeTaskSuspended] == 1 && tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED
	})
}

// TestAWaitingPlanApprovalRemindsThenSuspends: the approval of a whole
// plan waits as an action's does: its approvers are reminded, then the
// task is suspended, once each, and the approval stays open.
func TestAWaitingPlanApprovalRemindsThenSuspends(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	c := planContract()
	c.Timers = &stewardv1.TaskTimers{ApprovalRemindAfter: durationpb.New(time.Second), ApprovalSuspendAfter: durationpb.New(2 * time.Second)}
	e.create(t, "p", "user:ana", c)
	hash := e.submitPlan(t, "p", 1, wires...)
	ap := e.judged("p", hash, awaitingApproval).Plan.Approval
	e.waitCounts(t, "p", func(n map[string]int, tk *stewardv1.Task) bool {
		return n[event.TypeApprovalReminded] > 0 && tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED
	})
	e.waitTimersHandled(t, true)
	if n := e.counts(t, "p"); n[event.TypeApprovalReminded] != 1 || n[event.TypeTaskSuspended] != 1 {
		t.Fatalf("reminded %d times, suspended %d times; want once each", n[event.TypeApprovalReminded], n[event.TypeTaskSuspended])
	}
	if got := e.notified(); len(got) != 1 || got[0] != ap.ApprovalId {
		t.Errorf("notified about %v, want [%s] once", got, ap.ApprovalId)
	}
	tk := e.WaitTask("p", func(*stewardv1.Task) bool { return true })
	if want := "approval " + ap.ApprovalId + " for plan version 1 waited longer than 2s"; !strings.Contains(tk.StatusReason, want) {
		t.Errorf("suspended because %q; want it to say %q", tk.StatusReason, want)
	}
	if tk.Plan.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL || tk.Plan.Approval.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED {
		t.Errorf("plan %s, approval %v; a suspension leaves the approval open", standing(tk), tk.Plan.Approval.Decision)
	}
}
