package task_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

func asked(question string, choices ...string) event.Payload {
	return &stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: question, Choices: choices}
}

func answered(answer string) event.Payload { return &stewardv1.InputProvided{Answer: answer} }

// TestFoldKeepsTheOpenQuestion follows Task.open_input through the moves
// in and out of waiting for input.
func TestFoldKeepsTheOpenQuestion(t *testing.T) {
	guard := &stewardv1.TaskNeedsInput{Reason: "the same failure 3 times", Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_SAME_FAILURES, ActionId: "a1"}
	suspended := &stewardv1.TaskSuspended{Reason: "deadline", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE}
	tests := []struct {
		name     string
		events   []event.Payload
		want     stewardv1.TaskStatus
		question string // "" for no open question
		choices  []string
		code     errs.Code // set when the last event is refused
	}{
		{"a question opens", []event.Payload{created(), started(), asked("Which region?", "eu", "us")},
			stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT, "Which region?", []string{"eu", "us"}, 0},
		{"an answer closes it and runs", []event.Payload{created(), started(), asked("Which region?", "eu", "us"), answered("eu")},
			stewardv1.TaskStatus_TASK_STATUS_RUNNING, "", nil, 0},
		{"a free answer", []event.Payload{created(), started(), asked("Anything else?"), answered("no, go on")},
			stewardv1.TaskStatus_TASK_STATUS_RUNNING, "", nil, 0},
		{"a resume closes it", []event.Payload{created(), started(), asked("Which region?"), resumed()},
			stewardv1.TaskStatus_TASK_STATUS_RUNNING, "", nil, 0},
		{"a pause keeps it", []event.Payload{created(), started(), asked("Which region?"), paused()},
			stewardv1.TaskStatus_TASK_STATUS_PAUSED, "Which region?", nil, 0},
		{"a resume from the pause waits again", []event.Payload{created(), started(), asked("Which region?"), paused(), resumed()},
			stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT, "Which region?", nil, 0},
		{"a suspension closes it", []event.Payload{created(), started(), asked("Which region?"), suspended},
			stewardv1.TaskStatus_TASK_STATUS_SUSPENDED, "", nil, 0},
		{"a cancel closes it", []event.Payload{created(), started(), asked("Which region?"), cancelled()},
			stewardv1.TaskStatus_TASK_STATUS_CANCELLED, "", nil, 0},
		{"Steward's stop asks its reason", []event.Payload{created(), started(), guard},
			stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT, "the same failure 3 times", nil, 0},
		{"Steward's stop is answered too", []event.Payload{created(), started(), guard, answered("the tool is fixed, try again")},
			stewardv1.TaskStatus_TASK_STATUS_RUNNING, "", nil, 0},
		{"an answer not among the choices", []event.Payload{created(), started(), asked("Which region?", "eu", "us"), answered("asia")},
			0, "", nil, errs.Invalid},
		{"an answer to a running task", []event.Payload{created(), started(), answered("eu")},
			0, "", nil, errs.FailedPrecondition},
		{"an answer while paused", []event.Payload{created(), started(), asked("Which region?"), paused(), answered("eu")},
			0, "", nil, errs.FailedPrecondition},
		{"a question with nothing asked", []event.Payload{created(), started(), asked(" ")},
			0, "", nil, errs.Invalid},
		{"a question to a pending task", []event.Payload{created(), asked("Which region?")},
			0, "", nil, errs.FailedPrecondition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := stewardtest.History(t, "t1", tt.events...)
			got, err := task.Fold(recs)
			if tt.code != 0 {
				if !errs.Is(err, tt.code) {
					t.Fatalf("err = %v, want %v", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.want {
				t.Fatalf("status = %v (%s), want %v", got.Status, got.StatusReason, tt.want)
			}
			in := got.OpenInput
			if tt.question == "" {
				if in != nil {
					t.Fatalf("open input = %v, want none", in)
				}
				return
			}
			if in.GetQuestion() != tt.question || !slices.Equal(in.Choices, tt.choices) {
				t.Fatalf("open input = %v, want %q %v", in, tt.question, tt.choices)
			}
			// The question is dated and signed by the event that asked it.
			var ask *stewardv1.Event
			for _, r := range recs {
				if r.Event.GetTaskNeedsInput() != nil {
					ask = r.Event
				}
			}
			if in.AskedBy != stewardtest.Principal || !in.AskedAt.AsTime().Equal(ask.Time.AsTime()) || in.Cause != ask.GetTaskNeedsInput().Cause || in.ActionId != ask.GetTaskNeedsInput().ActionId {
				t.Fatalf("open input = %v, asked by %v", in, ask)
			}
		})
	}
}

// TestAnswerRevalidatesPermits checks that an answer is a resume: a permit
// issued before the task stopped is checked again before it is used.
func TestAnswerRevalidatesPermits(t *testing.T) {
	for _, last := range []event.Payload{answered("go on"), resumed()} {
		t.Run(string(last.ProtoReflect().Descriptor().Name()), func(t *testing.T) {
			got, err := fold(t, permittedAction(), one(asked("Shall I go on?"), last))
			if err != nil {
				t.Fatal(err)
			}
			if a := got.Actions[0]; !a.PermitStale || got.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
				t.Fatalf("after %T: task %v, action %v stale %v", last, got.Status, a.Status, a.PermitStale)
			}
		})
	}
}

// TestAQuestionAsksOnePerson: a question's ask_ref is kept on the open
// question, and must name the requester or the accountable owner.
func TestAQuestionAsksOnePerson(t *testing.T) {
	c := created()
	c.(*stewardv1.TaskCreated).Contract.RequesterRef, c.(*stewardv1.TaskCreated).Contract.AccountableOwnerRef = "user:a", "user:b"
	ask := func(ref string) event.Payload {
		return &stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: "Go?", AskRef: ref}
	}
	tk, err := task.Fold(stewardtest.History(t, "t1", c, started(), ask("user:b")))
	if err != nil || tk.OpenInput.GetAskRef() != "user:b" {
		t.Fatalf("open input %v (%v); want it to ask user:b", tk.GetOpenInput(), err)
	}
	var e *errs.Error
	if _, err := task.Fold(stewardtest.History(t, "t1", c, started(), ask("user:z"))); !errors.As(err, &e) || e.Field != "ask_ref" {
		t.Fatalf("a question for user:z: %v; want a refusal naming ask_ref", err)
	}
}
