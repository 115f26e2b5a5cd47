package governance_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/timer"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

const (
	taskID     = "task-1"
	actionID   = "act-1"
	approvalID = "apv-1"
)

// env is a log, timers and what a governance plane needs, on one embedded
// JetStream.
type env struct {
	log    *eventlog.Log
	bus    *stewardtest.Bus
	timers *timer.Timers

	mu       sync.Mutex
	reminded []string // approvals the Notifier was told about
	alerted  []string // budget alerts the BudgetNotifier was told about
}

func newEnv(t *testing.T) *env {
	log, bus := stewardtest.OpenLog(t)
	timers, err := timer.Open(context.Background(), bus.JS, timer.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return &env{log: log, bus: bus, timers: timers}
}

// start starts a governance plane with timers; stop it with the returned
// function (also called when the test ends).
func (e *env) start(t *testing.T) (stop func()) {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	store, err := action.OpenStore(ctx, e.bus.JS, action.RequestBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := governance.New(e.log, logger, engine, toolreg.New(logger), store,
		governance.WithTimers(e.timers),
		governance.WithNotifier(func(_ context.Context, ap *stewardv1.Approval, waited time.Duration) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.reminded = append(e.reminded, ap.ApprovalId)
		}),
		governance.WithBudgetNotifier(func(_ context.Context, taskID string, a *stewardv1.BudgetAlerted) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.alerted = append(e.alerted, fmt.Sprintf("%s %s:%d", taskID, a.Dimension, a.Percent))
		}))
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(p.Stop) }
	t.Cleanup(stop)
	return stop
}

func (e *env) notified() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.reminded...)
}

// awaitApproval writes the history of a running task whose one action
// waits for approval, asked for now, with the given thresholds. It is
// written before the plane starts, so that the plane finds the action
// past the steps it would take itself.
func (e *env) awaitApproval(t *testing.T, remind, suspend time.Duration) {
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
			RequiredRoles: []string{"treasurer"}, RequestedAt: timestamppb.Now(),
		}},
	} {
		e.append(t, p)
	}
}

func (e *env) append(t *testing.T, p event.Payload) *stewardv1.Task {
	t.Helper()
	if _, ok := p.(*stewardv1.TaskCreated); ok {
		ev, err := event.New(event.Meta{TaskID: taskID, Actor: &stewardv1.Actor{Principal: "test"}}, p)
		if err == nil {
			_, err = e.log.Append(context.Background(), eventlog.Head{}, ev)
		}
		if err != nil {
			t.Fatal(err)
		}
		return nil
	}
	tk, err := taskstore.Update(context.Background(), e.log, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{TaskID: taskID, Actor: &stewardv1.Actor{Principal: "test"}}, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// count returns how many events of each type the task has.
func (e *env) count(t *testing.T) map[string]int {
	t.Helper()
	recs, err := e.log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range recs {
		n[r.Event.Type]++
	}
	return n
}

// waitTimersSet waits until both of the approval's timers are stored.
func (e *env) waitTimersSet(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s, err := e.bus.JS.Stream(ctx, timer.DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs >= 2 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the approval's timers were never set")
}

// waitFor polls the task until ok or the deadline.
func (e *env) waitFor(t *testing.T, what string, ok func(map[string]int, *stewardv1.Task) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		tk, _, err := taskstore.Load(context.Background(), e.log, taskID)
		if err != nil {
			t.Fatal(err)
		}
		if ok(e.count(t), tk) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("never saw %s; events: %v", what, e.count(t))
}

// checkRemindedAndSuspendedOnce waits for the reminder and the
// suspension, then checks that each happened once and stays that way.
func (e *env) checkRemindedAndSuspendedOnce(t *testing.T) {
	t.Helper()
	e.waitFor(t, "a reminder and a suspension", func(n map[string]int, _ *stewardv1.Task) bool {
		return n[event.TypeApprovalReminded] > 0 && n[event.TypeTaskSuspended] > 0
	})
	time.Sleep(1500 * time.Millisecond) // room for a duplicate to show up
	n := e.count(t)
	if n[event.TypeApprovalReminded] != 1 || n[event.TypeTaskSuspended] != 1 {
		t.Fatalf("reminded %d times, suspended %d times; want once each", n[event.TypeApprovalReminded], n[event.TypeTaskSuspended])
	}
	if got := e.notified(); len(got) != 1 || got[0] != approvalID {
		t.Errorf("notified about %v, want [%s] once", got, approvalID)
	}
	recs, err := e.log.Read(context.Background(), taskID)
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
	tk, _, err := taskstore.Load(context.Background(), e.log, taskID)
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
	e := newEnv(t)
	e.awaitApproval(t, time.Second, 2*time.Second)
	e.start(t)
	e.checkRemindedAndSuspendedOnce(t)
}

func TestDecidedApprovalFiresNothing(t *testing.T) {
	e := newEnv(t)
	e.awaitApproval(t, 2*time.Second, 3*time.Second)
	e.start(t)
	e.waitTimersSet(t)
	e.append(t, &stewardv1.ApprovalDecided{
		ApprovalId: approvalID, ActionId: actionID, ActionHash: "h",
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT, DecidedBy: "user:t",
	})
	time.Sleep(5 * time.Second) // past both timers
	n := e.count(t)
	if n[event.TypeApprovalReminded] != 0 || n[event.TypeTaskSuspended] != 0 || len(e.notified()) != 0 {
		t.Fatalf("a decided approval reminded %d times and suspended %d times (notified %v); want neither",
			n[event.TypeApprovalReminded], n[event.TypeTaskSuspended], e.notified())
	}
}

// TestApprovalTimersSurviveRestart sets the timers, stops the plane before
// either fires, lets both come due with no plane running, and starts a new
// plane on the same log: each fires once.
func TestApprovalTimersSurviveRestart(t *testing.T) {
	e := newEnv(t)
	e.awaitApproval(t, time.Second, 2*time.Second)
	stop := e.start(t)
	e.waitTimersSet(t)
	stop()
	time.Sleep(3500 * time.Millisecond)
	if n := e.count(t); n[event.TypeApprovalReminded] != 0 || n[event.TypeTaskSuspended] != 0 {
		t.Fatalf("timers acted with no plane running: %v", n)
	}
	e.start(t)
	e.checkRemindedAndSuspendedOnce(t)
}

// TestSuspensionDueWhilePausedComesOnResume pauses the task before the
// approval's suspension comes due: the timer leaves a held task alone, and
// the resume brings the suspension.
func TestSuspensionDueWhilePausedComesOnResume(t *testing.T) {
	e := newEnv(t)
	e.awaitApproval(t, time.Second, 2*time.Second)
	e.append(t, &stewardv1.TaskPaused{Reason: "held"})
	e.start(t)
	e.waitFor(t, "the reminder", func(n map[string]int, _ *stewardv1.Task) bool { return n[event.TypeApprovalReminded] > 0 })
	time.Sleep(2 * time.Second) // past the suspension
	if n := e.count(t); n[event.TypeTaskSuspended] != 0 {
		t.Fatalf("a paused task was suspended: %v", n)
	}
	e.append(t, &stewardv1.TaskResumed{Reason: "back"})
	e.waitFor(t, "the suspension after the resume", func(n map[string]int, tk *stewardv1.Task) bool {
		return n[event.TypeTaskSuspended] == 1 && tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED
	})
}
