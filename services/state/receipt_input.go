package state

import (
	"slices"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// receiptQuestions lists every stop for input in recs, in order, each with
// the answer that closed it, if a person gave one. A stop closed any other
// way (a resume, a cancellation) keeps no answer.
func receiptQuestions(recs []*stewardv1.EventRecord) []*stewardv1.ReceiptQuestion {
	var out []*stewardv1.ReceiptQuestion
	var open *stewardv1.ReceiptQuestion
	for _, rec := range recs {
		ev := rec.Event
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
		rows = append(rows, []string{orDash(text(q.AskedBy)), orDash(text(q.Question)),
			orDash(strings.Join(choices, " / ")), orDash(text(q.Answer)), orDash(text(q.AnsweredBy)),
			orDash(when(q.AskedAt)), orDash(when(q.AnsweredAt))})
	}
	w.table("Asked by | Question | Choices | Answer | Answered by | Asked | Answered", rows)
}
