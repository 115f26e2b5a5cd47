package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestDeadline runs the real binary past a task's deadline: the task is
// suspended at it, with the cause and a reason on the timeline, and takes
// no proposals; anyone but the accountable owner is refused an extension;
// the owner's extension lets an operator renew the credential up to the
// new deadline, and after a resume a new action runs.
func TestDeadline(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	ctx := context.Background()

	k := contract()
	k.AccountableOwnerRef = "user:owner"
	// Timers fire in whole seconds by the binary's clock, which no test
	// can move: a deadline two seconds ahead is reached soon, and leaves
	// the task time to start.
	due := time.Now().Add(2 * time.Second)
	k.Deadline = timestamppb.New(due)
	id := h.create(t, "deadline-1", k)

	tk := waitServed(t, h.agent.clients, id, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED && tk.SuspendedFor == stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE,
			fmt.Sprintf("%v (%s), want suspended at its deadline", tk.Status, tk.StatusReason)
	})
	if time.Now().Before(due) {
		t.Fatalf("suspended before the deadline %s", due)
	}
	if !strings.Contains(tk.StatusReason, "deadline") || !strings.Contains(tk.StatusReason, "user:owner") {
		t.Errorf("status reason %q: want the deadline and who may extend it", tk.StatusReason)
	}
	if err := h.propose(t, id, "too-late", "search", "", map[string]any{"q": "x"}, nil); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("a proposal past the deadline: %v, want failed_precondition", err)
	}

	later := timestamppb.New(time.Now().Add(time.Hour))
	extend := func(c authed, requestID string) (*stewardv1.Task, error) {
		resp, err := c.tasks.ExtendDeadline(ctx, connect.NewRequest(&stewardv1.ExtendDeadlineRequest{
			TaskId: id, Deadline: later, Reason: "the vendor's data came a day late", RequestId: requestID}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.Task, nil
	}
	for name, c := range map[string]authed{"the agent": h.agent, "an approver": h.approver, "an operator": h.operator} {
		if _, err := extend(c, "not-mine"); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("%s extending the deadline: %v, want permission_denied", name, err)
		}
	}
	for range 2 { // a retry of the same request is answered alike
		tk, err := extend(h.owner, "extend-1")
		if err != nil {
			t.Fatal(err)
		}
		if !tk.Contract.Deadline.AsTime().Equal(later.AsTime()) || tk.Status != stewardv1.TaskStatus_TASK_STATUS_SUSPENDED {
			t.Fatalf("after the extension: deadline %v, %v; want %v, still suspended", tk.Contract.Deadline.AsTime(), tk.Status, later.AsTime())
		}
	}

	renewed, err := h.operator.governance.RenewCredential(ctx, connect.NewRequest(&stewardv1.RenewCredentialRequest{
		TaskId: id, Reason: "the deadline was extended", RequestId: "renew-1"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := renewed.Msg.Credential.Credential.ExpiresAt.AsTime(); !got.Equal(later.AsTime()) {
		t.Errorf("renewed until %v, want the new deadline %v", got, later.AsTime())
	}
	if _, err := h.owner.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: id, Reason: "back to work", RequestId: "resume-1"})); err != nil {
		t.Fatal(err)
	}
	a := propose(t, h.agent, id, "after-extension", "search", map[string]any{"q": "incidents"})
	waitAction(t, h.agent.clients, id, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	tl, err := h.agent.query.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: id}))
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, e := range tl.Msg.Entries {
		said = append(said, e.Summary)
	}
	all := strings.Join(said, "\n")
	for _, want := range []string{
		"The task was suspended at its deadline: its deadline " + due.UTC().Format(time.RFC3339)[:17],
		"user:owner via control extended the deadline from ",
		"to " + later.AsTime().UTC().Format(time.RFC3339) + ": the vendor's data came a day late",
		"renewed the task's credential until " + later.AsTime().UTC().Format(time.RFC3339),
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the timeline does not say %q:\n%s", want, all)
		}
	}
}

// TestDeadlinePassedWhileDownSuspendsOnRestart kills the binary before a
// task's deadline and starts it again on the same data after the deadline
// passed: the timer, due while nothing ran, suspends the task.
func TestDeadlinePassedWhileDownSuspendsOnRestart(t *testing.T) {
	data := t.TempDir()
	p := startBinary(t, data)
	c := newClients(p.url)
	k := contract()
	due := time.Now().Add(3 * time.Second)
	k.Deadline = timestamppb.New(due)
	resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "deadline-restart", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStarted(t, c, id)
	p.kill()
	if time.Now().After(due) {
		t.Skip("the task took longer to start than its deadline gave it")
	}
	waitPast(t, due.Add(time.Second)) // timers fire on whole seconds
	p = startBinary(t, data)
	waitServed(t, newClients(p.url), id, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.SuspendedFor == stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE, fmt.Sprintf("%v (%s), want suspended at its deadline", tk.Status, tk.StatusReason)
	})
}
