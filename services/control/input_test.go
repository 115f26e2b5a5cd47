package control_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/control"
)

func TestInputNamesTheBadField(t *testing.T) {
	r := idleHarness(t)
	ctx := context.Background()
	many := make([]string, control.MaxChoices+1)
	for i := range many {
		many[i] = strings.Repeat("c", i+1)
	}
	ask := func(q string, choices ...string) func() error {
		return func() error {
			_, err := r.ctl.RequestInput(ctx, "agent", &stewardv1.RequestInputRequest{TaskId: "t1", Question: q, Choices: choices})
			return err
		}
	}
	answer := func(a string) func() error {
		return func() error {
			_, err := r.ctl.ProvideInput(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.ProvideInputRequest{TaskId: "t1", Answer: a})
			return err
		}
	}
	tests := []struct {
		name  string
		call  func() error
		code  errs.Code
		field string
	}{
		{"no question", ask(""), errs.Invalid, "question"},
		{"a blank question", ask(" \n"), errs.Invalid, "question"},
		{"a long question", ask(strings.Repeat("q", control.MaxTextLen+1)), errs.TooLarge, "question"},
		{"a question that is not UTF-8", ask("\xff?"), errs.Invalid, "question"},
		{"too many choices", ask("Which?", many...), errs.TooLarge, "choices"},
		{"an empty choice", ask("Which?", "eu", ""), errs.Invalid, "choices[1]"},
		{"a blank choice", ask("Which?", "eu", "  "), errs.Invalid, "choices[1]"},
		{"a long choice", ask("Which?", strings.Repeat("c", control.MaxChoiceLen+1)), errs.TooLarge, "choices[0]"},
		{"a repeated choice", ask("Which?", "eu", "us", "eu"), errs.Invalid, "choices[2]"},
		{"no task id", func() error {
			_, err := r.ctl.RequestInput(ctx, "agent", &stewardv1.RequestInputRequest{Question: "Which?"})
			return err
		}, errs.Invalid, "task_id"},
		{"no answer", answer(""), errs.Invalid, "answer"},
		{"a blank answer", answer("\t"), errs.Invalid, "answer"},
		{"a long answer", answer(strings.Repeat("a", control.MaxTextLen+1)), errs.TooLarge, "answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
				t.Fatalf("err = %v, want %s naming %s", err, tt.code, tt.field)
			}
		})
	}
}

// TestInputRoundTrip: the agent asks, GetTask's fold shows the question,
// only the requester, the owner or an operator answers, with one of the
// choices, and the task runs again. Both commands are idempotent on their
// request ids.
func TestInputRoundTrip(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "input", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	ask := &stewardv1.RequestInputRequest{TaskId: id, RequestId: "q-1", Question: "Which region?", Choices: []string{"eu", "us"}}

	var events uint32
	for i := range 2 {
		tk, err := r.ctl.RequestInput(ctx, "agent", ask)
		if err != nil {
			t.Fatal(err)
		}
		in := tk.OpenInput
		if tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT || in.GetQuestion() != "Which region?" || !slices.Equal(in.Choices, ask.Choices) ||
			in.AskedBy != "agent" || in.Cause != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED || in.AskedAt == nil {
			t.Fatalf("after asking: %s (%s), open input %v", tk.Status, tk.StatusReason, in)
		}
		if i == 1 && tk.EventCount != events {
			t.Fatalf("a repeated question appended: %d events, then %d", events, tk.EventCount)
		}
		events = tk.EventCount
	}
	// The request id names that question only; another question waits.
	other := &stewardv1.RequestInputRequest{TaskId: id, RequestId: "q-1", Question: "Which region, again?"}
	if _, err := r.ctl.RequestInput(ctx, "agent", other); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("the request id for another question: %v, want already exists", err)
	}
	other.RequestId = "q-2"
	if _, err := r.ctl.RequestInput(ctx, "agent", other); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "waiting for input") {
		t.Fatalf("a question while waiting: %v, want failed precondition naming the status", err)
	}

	provide := func(who rpc.Identity, requestID, answer string) (*stewardv1.Task, error) {
		return r.ctl.ProvideInput(ctx, who, &stewardv1.ProvideInputRequest{TaskId: id, RequestId: requestID, Answer: answer})
	}
	for _, who := range []rpc.Identity{
		{Principal: "user:eve"},
		{Principal: "agent"},
		{Principal: "user:ops", Roles: []string{control.OperatorRole}}, // a role without a token is a claim, not a role
	} {
		if _, err := provide(who, "", "eu"); !errs.Is(err, errs.PermissionDenied) || !strings.Contains(err.Error(), "user:a") {
			t.Fatalf("an answer by %v: %v, want permission denied naming who may", who, err)
		}
	}
	if _, err := provide(rpc.Identity{Principal: "user:a"}, "a-1", "asia"); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "answer") {
		t.Fatalf("an answer not among the choices: %v, want invalid naming answer", err)
	}
	// The refused answer did not spend its request id.
	for i := range 2 {
		tk, err := provide(rpc.Identity{Principal: "user:a"}, "a-1", "eu")
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || tk.OpenInput != nil || tk.StatusReason != "answered by user:a" {
			t.Fatalf("after answering: %s (%s), open input %v", tk.Status, tk.StatusReason, tk.OpenInput)
		}
		if i == 1 && tk.EventCount != events+1 {
			t.Fatalf("a repeated answer appended: %d events, want %d", tk.EventCount, events+1)
		}
	}
	if _, err := provide(rpc.Identity{Principal: "user:a"}, "a-1", "us"); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("the request id of an answer given, for another answer: %v, want already exists", err)
	}
	if _, err := provide(rpc.Identity{Principal: "user:a"}, "a-2", "eu"); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("an answer to a running task: %v, want failed precondition", err)
	}

	// An operator, authenticated, may answer; so may a free answer, when
	// no choices were offered.
	if _, err := r.ctl.RequestInput(ctx, "agent", &stewardv1.RequestInputRequest{TaskId: id, Question: "Anything else?"}); err != nil {
		t.Fatal(err)
	}
	tk, err := provide(rpc.Identity{Principal: "user:ops", Roles: []string{control.OperatorRole}, Verified: true}, "", "no, go on")
	if err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("an operator's answer: %v, %v", tk.GetStatus(), err)
	}
}

// TestAnswerResumesAnyWait: a task that Steward stopped for input, here
// for the same failure again and again, is answered like a question.
func TestAnswerResumesAnyWait(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "guarded", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	r.Append(id, &stewardv1.TaskNeedsInput{Reason: "the same failure 3 times", Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_SAME_FAILURES})
	if tk := r.task(t, id); tk.OpenInput.GetQuestion() != "the same failure 3 times" {
		t.Fatalf("open input %v, want the reason as the question", tk.OpenInput)
	}
	tk, err := r.ctl.ProvideInput(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "the tool is fixed"})
	if err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || tk.OpenInput != nil {
		t.Fatalf("after answering: %v, %v", tk, err)
	}
}

// TestOnlyARunningTaskAsks: a paused task cannot ask.
func TestOnlyARunningTaskAsks(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "paused", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	if _, err := r.ctl.PauseTask(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.PauseTaskRequest{TaskId: id}); err != nil {
		t.Fatal(err)
	}
	_, err := r.ctl.RequestInput(ctx, "agent", &stewardv1.RequestInputRequest{TaskId: id, RequestId: "q", Question: "Which?"})
	if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("a paused task asks: %v, want failed precondition naming the status", err)
	}
}

// TestOnlyWhoMayAnswerResumesAWait: with --auth, a task waiting for input
// is resumed only by those who may answer it; the agent cannot wave away
// its own stop (an escalation, the action cap) with ResumeTask.
func TestOnlyWhoMayAnswerResumesAWait(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "resume-wait", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	r.Append(id, &stewardv1.TaskNeedsInput{Reason: "escalated: wire failed", Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ESCALATED})
	resume := &stewardv1.ResumeTaskRequest{TaskId: id, Reason: "carry on"}
	agent := rpc.Identity{Principal: r.task(t, id).CreatedBy, Verified: true}
	if _, err := r.ctl.ResumeTask(ctx, agent, resume); !errs.Is(err, errs.PermissionDenied) {
		t.Fatalf("the agent resumed its own wait: %v", err)
	}
	if tk := r.task(t, id); tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT {
		t.Fatalf("after a refused resume: %s", tk.Status)
	}
	owner := rpc.Identity{Principal: r.task(t, id).Contract.AccountableOwnerRef, Verified: true}
	if tk, err := r.ctl.ResumeTask(ctx, owner, resume); err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("the owner's resume: %v, %v", tk.GetStatus(), err)
	}
}

// TestOnlyWhoPausedOrMayAnswerResumesAPause: with tokens, a task its owner
// paused is not resumed by its agent, who may still resume a pause of its
// own; the owner, or whoever paused it, may. An owner takes over a pause
// the agent made first.
func TestOnlyWhoPausedOrMayAnswerResumesAPause(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "resume-pause", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	tk := r.task(t, id)
	agent := rpc.Identity{Principal: tk.CreatedBy, Verified: true}
	owner := rpc.Identity{Principal: tk.Contract.AccountableOwnerRef, Verified: true}
	operator := rpc.Identity{Principal: "user:ops", Roles: []string{"operator"}, Verified: true}
	pause := func(who rpc.Identity) {
		t.Helper()
		if _, err := r.ctl.PauseTask(ctx, who, &stewardv1.PauseTaskRequest{TaskId: id, Reason: "hold"}); err != nil {
			t.Fatal(err)
		}
		if got := r.task(t, id).PausedBy; got != who.Principal {
			t.Fatalf("paused by %q, want %q", got, who.Principal)
		}
	}
	resume := &stewardv1.ResumeTaskRequest{TaskId: id, Reason: "carry on"}
	for _, tc := range []struct {
		name             string
		pausedBy, resume rpc.Identity
		allowed          bool
	}{
		{"the agent, of its own pause", agent, agent, true},
		{"the agent, of its owner's pause", owner, agent, false},
		{"the owner, of the agent's pause", agent, owner, true},
		{"the agent, of an operator's pause", operator, agent, false},
		{"the operator, of its own pause", operator, operator, true},
	} {
		pause(tc.pausedBy)
		_, err := r.ctl.ResumeTask(ctx, tc.resume, resume)
		switch {
		case tc.allowed && err != nil:
			t.Fatalf("%s: %v", tc.name, err)
		case !tc.allowed && (!errs.Is(err, errs.PermissionDenied) || !strings.Contains(err.Error(), tc.pausedBy.Principal+" paused it")):
			t.Fatalf("%s: %v, want permission denied naming who paused it", tc.name, err)
		case !tc.allowed:
			if _, err := r.ctl.ResumeTask(ctx, owner, resume); err != nil {
				t.Fatalf("%s, then the owner: %v", tc.name, err)
			}
		}
		if tk := r.task(t, id); tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || tk.PausedBy != "" {
			t.Fatalf("%s: the task is %s, paused by %q", tc.name, tk.Status, tk.PausedBy)
		}
	}

	// The agent pauses first: its owner takes the pause over, and the
	// agent can no longer lift it, nor take it back.
	pause(agent)
	if _, err := r.ctl.PauseTask(ctx, agent, &stewardv1.PauseTaskRequest{TaskId: id}); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("the agent pauses its own pause again: %v, want failed precondition", err)
	}
	pause(owner)
	if _, err := r.ctl.PauseTask(ctx, agent, &stewardv1.PauseTaskRequest{TaskId: id}); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "by "+owner.Principal) {
		t.Fatalf("the agent takes its owner's pause back: %v, want failed precondition naming the owner", err)
	}
	if _, err := r.ctl.ResumeTask(ctx, agent, resume); !errs.Is(err, errs.PermissionDenied) {
		t.Fatalf("the agent lifts a pause its owner took over: %v", err)
	}
	if tk, err := r.ctl.ResumeTask(ctx, owner, resume); err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("the owner resumes: %v, %v; want running again", tk.GetStatus(), err)
	}
}
