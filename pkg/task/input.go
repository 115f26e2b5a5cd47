package task

import (
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// A task waiting for input holds its open question (Task.open_input): what
// the agent asked (TaskNeedsInput with cause ASKED), or, when Steward
// stopped the task on its own account (a loop guard, an escalated failure,
// the action cap), the reason, as the question a person answers. An
// answer (InputProvided) is a resume with words: the task runs again, and
// the permits issued before it are checked again, as after TaskResumed.
// The question stays open while the task is paused from waiting for input
// (a resume returns it there), and while it is suspended because the
// question waited too long (inputladder.go: an answer resumes it); any
// other move out of waiting for input closes it.

// askedInput is the open question a TaskNeedsInput event opens.
func askedInput(ev *stewardv1.Event, n *stewardv1.TaskNeedsInput) *stewardv1.InputRequest {
	q := n.Question
	if q == "" {
		q = orDefault(n.Reason, "needs input")
	}
	in := &stewardv1.InputRequest{
		Cause:    n.Cause,
		Question: q,
		Choices:  slices.Clone(n.Choices),
		AskedBy:  ev.Actor.GetPrincipal(),
		AskedAt:  ev.Time,
		ActionId: n.ActionId,
		AskRef:   n.AskRef,
		// The milestone at its cap, which a resume grants more.
		MilestoneId: n.MilestoneId,
	}
	if Laddered(in) {
		// What the ladder's rungs name (inputladder.go); Steward's own
		// stops climb none, and read as they always did.
		in.QuestionId = ev.EventId
	}
	return in
}

// checkAsked checks what a TaskNeedsInput asks: an agent's question must
// say something, and whom it asks must be one who may answer.
func checkAsked(t *stewardv1.Task, n *stewardv1.TaskNeedsInput) error {
	if n.Cause == stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED && strings.TrimSpace(n.Question) == "" {
		return errs.Field("question", "is required: say what you need to know")
	}
	capped := n.Cause == stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_MILESTONE_CAP
	switch {
	case capped && FindMilestone(t.Contract, n.MilestoneId) == nil:
		return unknownMilestone(t, "milestone_id", n.MilestoneId)
	case !capped && n.MilestoneId != "":
		// A resume grants the milestone an open question names more:
		// only a stop at its cap may name one.
		return errs.Field("milestone_id", "names a milestone only for NEEDS_INPUT_CAUSE_MILESTONE_CAP, not %s", n.Cause)
	}
	return CheckAskRef(t.Contract, n.AskRef)
}

// CheckAskRef checks whom a question asks (ask_ref): empty, or the
// contract's requester or accountable owner — those who may answer the
// task's questions, of whom it picks one. Anyone else could not get past
// the role table (pkg/access) to answer.
func CheckAskRef(c *stewardv1.TaskContract, ref string) error {
	if ref == "" || ref == c.GetRequesterRef() || ref == c.GetAccountableOwnerRef() {
		return nil
	}
	return errs.Field("ask_ref", "%s may not answer task %s's questions: ask its requester %s or its accountable owner %s, or leave it empty for either",
		errs.Quote(ref), c.GetTaskId(), c.GetRequesterRef(), c.GetAccountableOwnerRef())
}

// checkAnswer checks an answer against t's open question: the task must be
// waiting for input, or suspended for want of the answer, and an answer to a question that offered choices
// must be one of them.
func checkAnswer(t *stewardv1.Task, a *stewardv1.InputProvided) error {
	if t.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT && !SuspendedForInput(t) {
		return illegal(t, "answer")
	}
	if choices := t.OpenInput.GetChoices(); len(choices) > 0 && !slices.Contains(choices, a.Answer) {
		return errs.Field("answer", "%s is not one of the choices offered: %s", errs.Quote(a.Answer), quoteAll(choices))
	}
	return nil
}

// keepInput closes t's open question once the task has left waiting for
// input, other than for a pause that will return to it.
func keepInput(t *stewardv1.Task) {
	waiting := stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT
	if t.Status != waiting && (t.Status != stewardv1.TaskStatus_TASK_STATUS_PAUSED || t.PausedFrom != waiting) && !SuspendedForInput(t) {
		t.OpenInput = nil
	}
}

// needsInputReason is the status reason of a task waiting for input: the
// reason given, or who asks what.
func needsInputReason(who string, n *stewardv1.TaskNeedsInput) string {
	switch {
	case n.Reason != "":
		return n.Reason
	case n.Question != "":
		return "waiting for an answer: " + who + " asks " + errs.Quote(n.Question)
	}
	return "needs input"
}

// answeredReason is the status reason of a task an answer sets running.
func answeredReason(ev *stewardv1.Event) string {
	if who := ev.Actor.GetPrincipal(); who != "" {
		return "answered by " + who
	}
	return "answered"
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = errs.Quote(s)
	}
	return strings.Join(q, ", ")
}
