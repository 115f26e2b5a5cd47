package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

// TestProposeRightAfterCreateWaitsForTheStart: a proposal that comes while
// its task is still pending — created, not yet started by the plane's own
// reaction — waits for the start and is taken, instead of being refused
// for a state that lasts milliseconds.
func TestProposeRightAfterCreateWaitsForTheStart(t *testing.T) {
	waiting := make(chan string, 1)
	r := idleHarness(t, control.StartWait(5*time.Second, func(id string) { waiting <- id }))
	r.register(t, &stewardv1.ToolContract{Name: "search", Version: "1",
		EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL})
	taskID := pendingTask(t, r)
	done := make(chan error, 1)
	go func() {
		_, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{
			TaskId: taskID, ProposalId: "right-away", Tool: "search", Target: "docs"})
		done <- err
	}()
	if id := <-waiting; id != taskID {
		t.Fatalf("the proposal waits for %s, want %s", id, taskID)
	}
	r.start(t) // the plane's reaction starts the task now, while the proposal waits
	if err := <-done; err != nil {
		t.Fatalf("a proposal made while its task was pending: %v, want it taken once the task started", err)
	}
	if a := r.task(t, taskID).Actions; len(a) != 1 {
		t.Fatalf("the task has %d actions, want 1", len(a))
	}
}

// TestProposeOnATaskThatDoesNotStartIsUnavailable: past the wait, a task
// nothing starts is Unavailable — retryable — and says it is pending; no
// action is recorded.
func TestProposeOnATaskThatDoesNotStartIsUnavailable(t *testing.T) {
	r := idleHarness(t, control.StartWait(50*time.Millisecond, nil))
	r.register(t, &stewardv1.ToolContract{Name: "search", Version: "1",
		EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL})
	taskID := pendingTask(t, r)
	_, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: "too-soon", Tool: "search", Target: "docs"})
	if !errs.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "has not started yet") {
		t.Fatalf("a proposal on a task that stays pending: %v, want Unavailable saying it has not started yet", err)
	}
	if tk := r.task(t, taskID); len(tk.Actions) != 0 || tk.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING {
		t.Fatalf("the refused proposal left the task %s with %d actions", tk.Status, len(tk.Actions))
	}
}

// pendingTask creates a task that may call search, on a harness whose
// reactions are not running: it stays pending.
func pendingTask(t *testing.T, r *harness) string {
	t.Helper()
	req := validRequest("pending")
	req.Contract.AllowedTools = []string{"search"}
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING {
		t.Fatalf("a new task is %s, want pending", tk.Status)
	}
	return tk.Contract.TaskId
}
