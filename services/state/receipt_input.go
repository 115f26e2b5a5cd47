package state

import (
	"fmt"
	"slices"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// receiptQuestions lists every stop for input in recs, in order, each with
// the answer that closed it, if a person gave one, and the rungs it
// climbed unanswered. A stop closed any other way (a resume, a
// cancellation) keeps no answer.
func receiptQuestions(recs []*stewardv1.EventRecord) []*stewardv1.ReceiptQuestion {
	var out []*stewardv1.ReceiptQuestion
	var open *stewardv1.ReceiptQuestion
	for _, rec := range recs {
		ev := rec.Event
		if open != nil && climbed(open, ev) {
			continue
		}
		switch p := ev.Payload.(type) {
		case *stewardv1.Event_TaskNeedsInput:
			n := p.TaskNeedsInput
			q := n.Question
			if q == "" {
				q = n.Reason
			}
			open = &stewardv1.ReceiptQuestion{
				Cause: n.Cause, Question: q, Choices: slices.Clone(n.Choices),
				AskedBy: ev.Actor.GetPrincipal(), AskedAt: ev.Time,
			}
			out = append(out, open)
		case *stewardv1.Event_InputProvided:
			if open != nil {
				open.Answer, open.AnsweredBy, open.AnsweredAt = p.InputProvided.Answer, ev.Actor.GetPrincipal(), ev.Time
				open = nil
			}
		}
	}
	return out
}

// climbed records on open question q the rung of the ladder ev is, if it
// is one.
func climbed(q *stewardv1.ReceiptQuestion, ev *stewardv1.Event) bool {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_InputReminded:
		q.RemindedAt = ev.Time
	case *stewardv1.Event_InputEscalated:
		q.EscalatedTo, q.EscalatedAt = p.InputEscalated.ToRef, ev.Time
	case *stewardv1.Event_TaskSuspended:
		if p.TaskSuspended.Cause != stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE {
			return false
		}
		q.SuspendedAt = ev.Time
	default:
		return false
	}
	return true
}

// ladder says, for the question's cell, the rungs it climbed.
func ladder(q *stewardv1.ReceiptQuestion) string {
	var rungs []string
	if q.RemindedAt != nil {
		rungs = append(rungs, "reminded at "+when(q.RemindedAt))
	}
	if q.EscalatedTo != "" {
		rungs = append(rungs, fmt.Sprintf("escalated to %s at %s", q.EscalatedTo, when(q.EscalatedAt)))
	}
	if q.SuspendedAt != nil {
		rungs = append(rungs, "the task suspended at "+when(q.SuspendedAt))
	}
	if len(rungs) == 0 {
		return ""
	}
	return " (" + strings.Join(rungs, "; ") + ")"
}

// questionsMarkdown renders the receipt's questions, if it has any: a
// task that never stopped for input gets no section.
func questionsMarkdown(w md, qs []*stewardv1.ReceiptQuestion) {
	if len(qs) == 0 {
		return
	}
	w.section("Questions")
	var rows [][]string
	for _, q := range qs {
		choices := make([]string, len(q.Choices))
		for i, c := range q.Choices {
			choices[i] = text(c)
		}
		rows = append(rows, []string{orDash(text(q.AskedBy)), orDash(text(q.Question + ladder(q))),
			orDash(strings.Join(choices, " / ")), orDash(text(q.Answer)), orDash(text(q.AnsweredBy)),
			orDash(when(q.AskedAt)), orDash(when(q.AnsweredAt))})
	}
	w.table("Asked by | Question | Choices | Answer | Answered by | Asked | Answered", rows)
}
