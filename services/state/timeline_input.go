package state

import (
	"fmt"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// needsInputSummary tells a stop for input: the agent's question and its
// choices in its own words, or why Steward stopped the task.
func needsInputSummary(who string, n *stewardv1.TaskNeedsInput) string {
	if n.Cause != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED {
		return withReason("The task stopped and waits for input", n.Reason)
	}
	s := fmt.Sprintf("%s asked for input and waits for an answer: %q", who, n.Question)
	if len(n.Choices) > 0 {
		quoted := make([]string, len(n.Choices))
		for i, c := range n.Choices {
			quoted[i] = fmt.Sprintf("%q", c)
		}
		s += " (choices: " + strings.Join(quoted, ", ") + ")"
	}
	return s
}

// inputProvidedSummary tells a person's answer, which sets the task
// running again.
func inputProvidedSummary(who string, a *stewardv1.InputProvided) string {
	if a.Answer == "" {
		// Hidden from a caller who may not read the task's content: an
		// answer may be a checkpoint step's result.
		return who + " answered, and the task goes on"
	}
	return fmt.Sprintf("%s answered %q, and the task goes on", who, a.Answer)
}

// inputLadderSummary tells a rung of an unanswered question's ladder.
func inputLadderSummary(ev *stewardv1.Event) string {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_InputReminded:
		return fmt.Sprintf("Question %s has waited %s; whom it asks were reminded", p.InputReminded.QuestionId, p.InputReminded.Waited.AsDuration())
	case *stewardv1.Event_InputEscalated:
		e := p.InputEscalated
		return fmt.Sprintf("Question %s has waited %s; it went to the backup, %s, who may answer it now", e.QuestionId, e.Waited.AsDuration(), e.ToRef)
	}
	return ""
}
