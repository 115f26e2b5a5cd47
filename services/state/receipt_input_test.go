package state_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

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

// TestReceiptAndTimelineTellTheQuestionLadder: a question reminded,
// escalated and its task suspended for it shows each rung on the timeline
// and on the receipt's question, in words and in markdown.
func TestReceiptAndTimelineTellTheQuestionLadder(t *testing.T) {
	const q = "question-1"
	var evs []*stewardv1.Event
	history := running()
	history[0].(*stewardv1.TaskCreated).Contract.InputBackupRef = "role:on-call"
	for _, p := range append(history,
		&stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: "Which region?"},
		&stewardv1.InputReminded{QuestionId: q, Waited: durationpb.New(time.Hour)},
		&stewardv1.InputEscalated{QuestionId: q, ToRef: "role:on-call", Waited: durationpb.New(2 * time.Hour)},
		&stewardv1.TaskSuspended{Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE, Reason: "question waited longer than 3h"},
		&stewardv1.InputProvided{Answer: "eu"}) {
		ev := stewardtest.Event(t, "ladder", p)
		if ev.GetTaskNeedsInput() != nil {
			ev.EventId = q
		}
		evs = append(evs, ev)
	}
	more := sealed(t, evs)
	r, err := state.BuildReceipt(more)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Questions[0]
	if got.RemindedAt == nil || got.EscalatedTo != "role:on-call" || got.EscalatedAt == nil || got.SuspendedAt == nil || got.Answer != "eu" {
		t.Fatalf("the receipt's question: %v", got)
	}
	if md := state.ReceiptMarkdown(r); !strings.Contains(md, "escalated to role:on-call at") || !strings.Contains(md, "the task suspended at") {
		t.Errorf("markdown does not tell the ladder:\n%s", md)
	}
	said := map[string]string{}
	for _, e := range state.Timeline(more) {
		said[e.Type] += e.Summary
	}
	for typ, want := range map[string]string{
		event.TypeInputReminded:  "has waited 1h0m0s; whom it asks were reminded",
		event.TypeInputEscalated: "it went to the backup, role:on-call, who may answer it now",
		event.TypeTaskSuspended:  "its question waited too long",
	} {
		if !strings.Contains(said[typ], want) {
			t.Errorf("timeline of %s: %q, want it to say %q", typ, said[typ], want)
		}
	}
}
