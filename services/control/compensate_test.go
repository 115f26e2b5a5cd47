package control_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

const (
	compensating = stewardv1.TaskStatus_TASK_STATUS_COMPENSATING
	failedStatus = stewardv1.TaskStatus_TASK_STATUS_FAILED
	cancelled    = stewardv1.TaskStatus_TASK_STATUS_CANCELLED
	compensate   = stewardv1.RecoveryMode_RECOVERY_MODE_COMPENSATE
)

// TestFailTaskWithoutCompensationFails: without a compensate recovery
// policy a failed task ends at once, even with reversible writes done.
func TestFailTaskWithoutCompensationFails(t *testing.T) {
	r := newHarness(t)
	id := r.runningTask(t, "plain", stewardv1.RecoveryMode_RECOVERY_MODE_ESCALATE, nil)
	a := r.propose(t, id, "w1", "write", "doc", map[string]any{"text": "a"})
	r.run(t, id, a.ActionId, succeeded(), []byte(`{}`), time.Now())
	tk, err := r.ctl.FailTask(context.Background(), "ops", &stewardv1.FailTaskRequest{TaskId: id, Reason: "gave up"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != failedStatus || tk.StatusReason != "gave up" {
		t.Fatalf("after FailTask: %s (%s), want failed (gave up)", tk.Status, tk.StatusReason)
	}
}

// TestFailTaskCompensatesWhenAsked: a person may ask FailTask to undo the
// reversible writes of a task whose recovery policy does not say so, such
// as one that escalated its failure to them.
func TestFailTaskCompensatesWhenAsked(t *testing.T) {
	r := newHarness(t)
	id := r.runningTask(t, "asked", stewardv1.RecoveryMode_RECOVERY_MODE_ESCALATE, nil)
	a := r.propose(t, id, "w1", "write", "doc", map[string]any{"text": "a"})
	r.run(t, id, a.ActionId, succeeded(), []byte(`{}`), time.Now())
	tk, err := r.ctl.FailTask(context.Background(), "ops", &stewardv1.FailTaskRequest{TaskId: id, Reason: "undo it", Compensate: true})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_COMPENSATING || len(tk.Compensations) != 1 || tk.Compensations[0] != a.ActionId {
		t.Fatalf("after FailTask with compensate: %s, compensations %v; want compensating %s", tk.Status, tk.Compensations, a.ActionId)
	}
}

// TestFailTaskCompensatesInReverse fails a task with three reversible
// writes done: it compensates the last to succeed first, one at a time,
// each with the original call's details, and fails once all have ended,
// saying how they went. A redelivery in the middle proposes nothing twice.
func TestFailTaskCompensatesInReverse(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "reverse", compensate, nil)
	var ids []string
	for _, p := range []string{"w1", "w2", "w3"} {
		ids = append(ids, r.propose(t, id, p, "write", "doc-"+p, map[string]any{"text": p}).ActionId)
	}
	read := r.propose(t, id, "s1", "search", "", map[string]any{"q": "x"})
	// They succeed in the order w1, w3, w2: undo w2, then w3, then w1.
	t0 := time.Now().Add(-time.Hour)
	r.run(t, id, ids[0], succeeded(), []byte(`{"row":1}`), t0.Add(1*time.Second))
	r.run(t, id, ids[1], succeeded(), []byte(`{"row":2}`), t0.Add(3*time.Second))
	r.run(t, id, ids[2], succeeded(), nil, t0.Add(2*time.Second))
	r.run(t, id, read.ActionId, succeeded(), nil, t0.Add(4*time.Second))
	want := []string{ids[1], ids[2], ids[0]}

	for range 2 { // the second call is a retry: same request id, same answer
		tk, err := r.ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: id, Reason: "deadline missed", RequestId: "fail-1"})
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != compensating {
			t.Fatalf("after FailTask: %s", tk.Status)
		}
	}
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return compensationOf(tk, want[0]) != nil })
	if tk.Status != compensating || tk.FinalStatus != failedStatus || !slices.Equal(tk.Compensations, want) {
		t.Fatalf("compensating: status %s, final %s, compensations %v; want compensating, failed, %v", tk.Status, tk.FinalStatus, tk.Compensations, want)
	}
	if _, err := r.ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: id, RequestId: "fail-2"}); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a second fail while compensating: %v, want failed precondition", err)
	}

	c := compensationOf(tk, want[0])
	if c.Tool != "undo" || c.Target != "doc-w2" || c.ProposedBy != "steward" {
		t.Fatalf("compensation %v: want undo of doc-w2 by steward", c)
	}
	r.checkParams(t, c, tk, want[0], `{"row":2}`)

	// Redelivery of everything so far adds nothing.
	before := r.count(t, id)
	r.redeliver(t)
	if after := r.count(t, id); after != before {
		t.Fatalf("redelivery appended %d events", after-before)
	}

	// End the first compensation; the driver proposes the next: w3,
	// whose call returned no result.
	r.run(t, id, c.ActionId, succeeded(), nil, time.Now())
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return compensationOf(tk, want[1]) != nil })
	c = compensationOf(tk, want[1])
	r.checkParams(t, c, tk, want[1], `null`)
	r.run(t, id, c.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC, "row is locked"), nil, time.Now())

	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return compensationOf(tk, want[2]) != nil })
	c = compensationOf(tk, want[2])
	r.checkParams(t, c, tk, want[2], `{"row":1}`)
	r.run(t, id, c.ActionId, succeeded(), nil, time.Now())

	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.Terminal(tk.Status) })
	wantReason := "deadline missed; compensated 2 of 3 actions; the compensation of " + want[1] + " failed: row is locked"
	if tk.Status != failedStatus || tk.StatusReason != wantReason {
		t.Fatalf("ended %s (%s), want failed (%s)", tk.Status, tk.StatusReason, wantReason)
	}
	if n := countCompensations(tk); n != 3 {
		t.Fatalf("%d compensations proposed, want 3", n)
	}
	// And again: nothing after the end either.
	before = r.count(t, id)
	r.redeliver(t)
	if after := r.count(t, id); after != before {
		t.Fatalf("redelivery after the end appended %d events", after-before)
	}
}

// TestCancelTaskCompensates: a cancel compensates like a fail and ends the
// task cancelled.
func TestCancelTaskCompensates(t *testing.T) {
	r := newHarness(t)
	id := r.runningTask(t, "cancel", compensate, nil)
	a := r.propose(t, id, "w1", "write", "doc", map[string]any{"text": "a"})
	r.run(t, id, a.ActionId, succeeded(), []byte(`"ok"`), time.Now())
	tk, err := r.ctl.CancelTask(context.Background(), "ops", &stewardv1.CancelTaskRequest{TaskId: id})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != compensating || tk.FinalStatus != cancelled {
		t.Fatalf("after cancel: %s, final %s; want compensating, cancelled", tk.Status, tk.FinalStatus)
	}
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return compensationOf(tk, a.ActionId) != nil })
	r.run(t, id, compensationOf(tk, a.ActionId).ActionId, succeeded(), nil, time.Now())
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.Terminal(tk.Status) })
	if tk.Status != cancelled || tk.StatusReason != "compensated 1 action" {
		t.Fatalf("ended %s (%s), want cancelled (compensated 1 action)", tk.Status, tk.StatusReason)
	}
}

// TestCancelAbandonsCompensation: cancelling a compensating task ends it
// at once, and the driver proposes nothing more.
func TestCancelAbandonsCompensation(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "abandon", compensate, nil)
	var ids []string
	for _, p := range []string{"w1", "w2"} {
		a := r.propose(t, id, p, "write", p, map[string]any{"text": p})
		r.run(t, id, a.ActionId, succeeded(), nil, time.Now())
		ids = append(ids, a.ActionId)
	}
	if _, err := r.ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: id}); err != nil {
		t.Fatal(err)
	}
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return compensationOf(tk, ids[1]) != nil })
	undo := compensationOf(tk, ids[1]).ActionId
	r.dispatch(t, id, undo)
	if tk, err := r.ctl.CancelTask(ctx, "ops", &stewardv1.CancelTaskRequest{TaskId: id, Reason: "stop"}); err != nil || tk.Status != cancelled {
		t.Fatalf("cancel while compensating: %v, %v", tk.GetStatus(), err)
	}
	// The compensation under way still ends; nothing new is proposed.
	r.finish(t, id, undo, succeeded(), nil, time.Now())
	r.settle()
	tk = r.task(t, id)
	if tk.Status != cancelled || countCompensations(tk) != 1 {
		t.Fatalf("after cancel: %s with %d compensations, want cancelled with 1", tk.Status, countCompensations(tk))
	}
}

// TestCompensationThatCannotBeProposedEndsTheTask: a compensating tool
// whose schema the driver's parameters do not fit ends the compensation
// with a reason, instead of trying for ever.
func TestCompensationThatCannotBeProposedEndsTheTask(t *testing.T) {
	r := newHarness(t)
	r.register(t, &stewardv1.ToolContract{Name: "strict", Version: "1", ParametersSchema: `{"type":"object","required":["amount"]}`})
	r.register(t, &stewardv1.ToolContract{Name: "pay", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, CompensatingTool: "strict"})
	req := validRequest("strict")
	req.Contract.AllowedTools = []string{"pay", "strict"}
	req.Contract.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: compensate}
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING })
	a := r.propose(t, id, "p1", "pay", "acct", nil)
	r.run(t, id, a.ActionId, succeeded(), nil, time.Now())
	if _, err := r.ctl.FailTask(context.Background(), "ops", &stewardv1.FailTaskRequest{TaskId: id, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.Terminal(tk.Status) })
	if tk.Status != failedStatus || !strings.Contains(tk.StatusReason, "could not propose the compensation of "+a.ActionId) ||
		!strings.Contains(tk.StatusReason, "params") || !strings.Contains(tk.StatusReason, "compensated 0 of 1 action") {
		t.Fatalf("ended %s (%s)", tk.Status, tk.StatusReason)
	}
}

// checkParams checks that compensation c of action orig carries the
// original call: id, op_key, target, params, and result.
func (r *harness) checkParams(t *testing.T, c *stewardv1.Action, tk *stewardv1.Task, orig, result string) {
	t.Helper()
	o := task.FindAction(tk, orig)
	canonical, err := r.Requests.Request(context.Background(), c.Request, c.RequestRef, c.RequestHash)
	if err != nil {
		t.Fatal(err)
	}
	origReq, err := r.Requests.Request(context.Background(), o.Request, o.RequestRef, o.RequestHash)
	if err != nil {
		t.Fatal(err)
	}
	var got, was struct {
		Params map[string]json.RawMessage `json:"params"`
		Target string                     `json:"target"`
	}
	if err := json.Unmarshal(canonical, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(origReq, &was); err != nil {
		t.Fatal(err)
	}
	wasParams, _ := json.Marshal(was.Params)
	for k, want := range map[string]string{
		"action_id": `"` + orig + `"`, "op_key": `"` + o.OpKey + `"`, "target": `"` + o.Target + `"`,
		"params": string(wasParams), "result": result,
	} {
		if string(got.Params[k]) != want {
			t.Errorf("compensation of %s: params.%s = %s, want %s", orig, k, got.Params[k], want)
		}
	}
	if got.Target != o.Target {
		t.Errorf("compensation target %q, want %q", got.Target, o.Target)
	}
}

// count is how many events taskID has once the plane has handled all.
func (r *harness) count(t *testing.T, taskID string) uint32 {
	t.Helper()
	r.settle()
	return r.task(t, taskID).EventCount
}

func countCompensations(tk *stewardv1.Task) int {
	n := 0
	for _, a := range tk.Actions {
		if a.Compensates != "" {
			n++
		}
	}
	return n
}
