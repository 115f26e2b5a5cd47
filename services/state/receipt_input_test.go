package state_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestReceiptAndTimelineTellQuestions: each stop for input is on the
// receipt with its answer, if one was given, and the timeline tells the
// question, its choices and the answer in words.
func TestReceiptAndTimelineTellQuestions(t *testing.T) {
	asked := func(q string, choices ...string) event.Payload {
		return &stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: q, Choices: choices}
	}
	history := append(running(),
		asked("Which region? eu | us", "eu", "us"),
		&stewardv1.InputProvided{Answer: "eu"},
		&stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_SAME_FAILURES, Reason: "the same failure 3 times"},
		&stewardv1.TaskResumed{Reason: "fixed"},
		asked("Anything else?"),
	)
	recs := stewardtest.History(t, "q", history...)
	r, err := state.BuildReceipt(recs)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		question, answer string
		choices          []string
	}{
		{"Which region? eu | us", "eu", []string{"eu", "us"}},
		{"the same failure 3 times", "", nil},
		{"Anything else?", "", nil},
	}
	if len(r.Questions) != len(want) {
		t.Fatalf("questions %v, want %d", r.Questions, len(want))
	}
	for i, w := range want {
		q := r.Questions[i]
		answered := q.AnsweredBy != "" && q.AnsweredAt != nil
		if q.Question != w.question || q.Answer != w.answer || !slices.Equal(q.Choices, w.choices) || q.AskedBy != stewardtest.Principal ||
			q.AskedAt == nil || answered != (w.answer != "") {
			t.Errorf("question %d: %v, want %q answered %q", i, q, w.question, w.answer)
		}
	}
	md := state.ReceiptMarkdown(r)
	if !strings.Contains(md, "## Questions") || !strings.Contains(md, `Which region? eu \| us`) || !strings.Contains(md, "| eu / us | eu |") {
		t.Errorf("markdown does not tell the questions:\n%s", md)
	}
	if md := state.ReceiptMarkdown(&stewardv1.Receipt{TaskId: "none"}); strings.Contains(md, "## Questions") {
		t.Errorf("a task that never stopped for input has a questions section:\n%s", md)
	}

	var said []string
	for _, e := range state.Timeline(recs) {
		if e.Type == event.TypeTaskNeedsInput || e.Type == event.TypeInputProvided {
			said = append(said, e.Summary)
		}
	}
	wantSaid := []string{
		`asked for input and waits for an answer: "Which region? eu | us" (choices: "eu", "us")`,
		`answered "eu", and the task goes on`,
		"The task stopped and waits for input: the same failure 3 times",
		`asked for input and waits for an answer: "Anything else?"`,
	}
	if len(said) != len(wantSaid) {
		t.Fatalf("timeline: %q", said)
	}
	for i, w := range wantSaid {
		if !strings.Contains(said[i], w) {
			t.Errorf("timeline entry %q, want it to say %q", said[i], w)
		}
	}
}
