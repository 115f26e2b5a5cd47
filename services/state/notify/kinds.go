package notify

import (
	"cmp"
	"fmt"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// kind is one notification: the events that make it, and what a person
// runs to act on it.
type kind struct {
	name string
	// on are the reactions to its events' types, made from one handler.
	on []func(eventlog.Handler) eventlog.Reaction
	// match, when set, takes only some events of those types.
	match func(ev *stewardv1.Event) bool
	// act is the command that acts on it, when a person is to act.
	act func(ev *stewardv1.Event) string
}

// kinds are the notifications, each a person's cue: an approval to
// decide or still waiting, a question to answer or still waiting, a
// budget running out, a task that stalled or was suspended, an outcome
// only a person can settle, a result to review, an end, an agent gone
// silent, and a schedule's firing that made no run or whose run failed
// (docs/notifications.md).
var kinds = []kind{
	{name: "approval.requested", on: reactions(eventlog.OnRecord[*stewardv1.ApprovalRequested]), act: decide},
	{name: "approval.reminded", on: reactions(eventlog.OnRecord[*stewardv1.ApprovalReminded]), act: decide},
	{name: "approval.escalated", on: reactions(eventlog.OnRecord[*stewardv1.ApprovalEscalated]), act: decide},
	{name: "question.asked", on: reactions(eventlog.OnRecord[*stewardv1.TaskNeedsInput]), act: answer},
	{name: "question.reminded", on: reactions(eventlog.OnRecord[*stewardv1.InputReminded]), act: answer},
	{name: "question.escalated", on: reactions(eventlog.OnRecord[*stewardv1.InputEscalated]), act: answer},
	{name: "budget.alerted", on: reactions(eventlog.OnRecord[*stewardv1.BudgetAlerted])},
	{name: "task.stalled", on: reactions(eventlog.OnRecord[*stewardv1.TaskStalled])},
	{name: "task.suspended", on: reactions(eventlog.OnRecord[*stewardv1.TaskSuspended]), act: resume},
	{name: "outcome.unknown", on: reactions(eventlog.OnRecord[*stewardv1.ActionOutcomeRecorded]), match: unknown, act: settle},
	{name: "task.produced", on: reactions(eventlog.OnRecord[*stewardv1.TaskProduced]), match: awaitsReview},
	{name: "task.ended", on: reactions(eventlog.OnRecord[*stewardv1.TaskAccepted], eventlog.OnRecord[*stewardv1.TaskCancelled],
		eventlog.OnRecord[*stewardv1.TaskFailed], eventlog.OnRecord[*stewardv1.TaskProduced]), match: task.Ends},
	{name: "agent.escalated", on: reactions(eventlog.OnRecord[*stewardv1.AgentEscalated])},
	{name: "schedule.not_run", on: reactions(eventlog.OnRecord[*stewardv1.ScheduleFired]), match: notRun, act: scheduleAct},
	{name: "schedule.run_failed", on: reactions(eventlog.OnRecord[*stewardv1.ScheduleRunEnded]), match: runFailed, act: runFailedAct},
}

func reactions(on ...func(eventlog.Handler) eventlog.Reaction) []func(eventlog.Handler) eventlog.Reaction {
	return on
}

// Kinds returns the notifications' names, in the table's order.
func Kinds() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	return names
}

func kindNamed(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kind{}, false
}

// byType indexes ks by the event types that make them, so that an event
// finds its kind by its type alone.
func byType(ks []kind) map[string][]kind {
	out := map[string][]kind{}
	for _, k := range ks {
		for _, on := range k.on {
			typ := on(nil).Type()
			out[typ] = append(out[typ], k)
		}
	}
	return out
}

// kindOf returns the kind an event makes, among those indexed; false for
// none (an outcome that is known).
func kindOf(ks map[string][]kind, ev *stewardv1.Event) (kind, bool) {
	for _, k := range ks[ev.Type] {
		if k.match == nil || k.match(ev) {
			return k, true
		}
	}
	return kind{}, false
}

// awaitsReview: a production a person must accept or return (one its
// criteria accepted ends the task; one whose checks failed goes back to
// work).
func awaitsReview(ev *stewardv1.Event) bool {
	return task.ProducedStatus(ev.GetTaskProduced()) == stewardv1.TaskStatus_TASK_STATUS_PRODUCED
}

// types are the event types of every kind, each once, in the table's
// order: every sink's consumer takes them all, whatever kinds its entry
// names, so that replicas reading different versions of the sinks file
// do not narrow one another's consumer (each takes what its own file says).
func types() []func(eventlog.Handler) eventlog.Reaction {
	var out []func(eventlog.Handler) eventlog.Reaction
	seen := map[string]bool{}
	for _, k := range kinds {
		for _, on := range k.on {
			if typ := on(nil).Type(); !seen[typ] {
				seen[typ] = true
				out = append(out, on)
			}
		}
	}
	return out
}

func unknown(ev *stewardv1.Event) bool {
	o := ev.GetActionOutcomeRecorded().GetOutcome()
	return o.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN
}

func decide(ev *stewardv1.Event) string {
	id := cmp.Or(ev.GetApprovalRequested().GetApproval().GetApprovalId(), ev.GetApprovalReminded().GetApprovalId(), ev.GetApprovalEscalated().GetApprovalId())
	return fmt.Sprintf("steward approvals show %s; then steward approvals approve|reject %[1]s --hash HASH, with the hash it shows", id)
}

// The commands below are the CLI's (docs/cli.md), words in capitals
// what the person fills in.

func answer(ev *stewardv1.Event) string {
	return fmt.Sprintf("steward questions answer %s ANSWER", ev.TaskId)
}

func settle(ev *stewardv1.Event) string {
	return fmt.Sprintf("steward actions settle %s %s --state succeeded|failed|not_accepted --reason TEXT", ev.TaskId, ev.GetActionOutcomeRecorded().GetActionId())
}

// resume says what lets a suspended task go on, by the suspension's cause.
func resume(ev *stewardv1.Event) string {
	id := ev.TaskId
	switch ev.GetTaskSuspended().GetCause() {
	case stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT:
		return fmt.Sprintf("steward budget raise %s --cost-micros N (or --tokens N): a raise that lifts it resumes the task", id)
	case stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE:
		return fmt.Sprintf("its accountable owner extends the deadline (ExtendDeadline), then steward tasks resume %s", id)
	case stewardv1.SuspendCause_SUSPEND_CAUSE_AGENT_SILENT:
		return fmt.Sprintf("its agent's next word resumes it; or steward tasks resume %s", id)
	case stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE:
		// Its question is still open, and its answer resumes it; a resume
		// would close the question unanswered.
		return fmt.Sprintf("steward questions answer %s ANSWER resumes it (or steward tasks resume %[1]s goes on without one)", id)
	}
	return fmt.Sprintf("steward tasks resume %s", id)
}
