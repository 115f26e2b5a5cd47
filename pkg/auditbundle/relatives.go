package auditbundle

import (
	"fmt"
	"slices"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// The tasks a task's events name: a bundle holds each, or lists it as
// withheld by the export (AuditBundle.withheld), so that a task dropped
// from a bundle is found. ExportBundle follows the same rule.

// EventRelatives are the tasks ev names on its own: a sub-task whose
// budget was reserved for it or came back.
func EventRelatives(ev *stewardv1.Event) []string {
	if b := ev.GetBudgetReleased(); b != nil {
		return nonEmpty(b.ChildTaskId, b.PassedOnFromTaskId)
	}
	// A delegation reserves the sub-task's budget from the parent's, in
	// the control plane's words (services/control/reserve.go): the one
	// record of a sub-task on its parent's log before it ends.
	if c := ev.GetBudgetConsumed(); c != nil && c.ReservedFor == "" {
		return nonEmpty(task.ReservedFor(c))
	}
	return nil
}

// TaskRelatives are the tasks t, as folded, names: the task it was
// delegated or forked from, and its plan's sub-tasks, retired steps'
// included.
func TaskRelatives(t *stewardv1.Task) []string {
	out := nonEmpty(t.GetContract().GetParentTaskId(), t.GetForkedFrom().GetParentTaskId())
	if ps := t.GetPlan(); ps != nil {
		for _, st := range append(slices.Clone(ps.Steps), ps.Retired...) {
			out = append(out, nonEmpty(append([]string{st.SubTaskId}, st.ItemSubTaskIds...)...)...)
		}
	}
	return out
}

func nonEmpty(ids ...string) []string {
	return slices.DeleteFunc(ids, func(id string) bool { return id == "" })
}

// checkRelatives fails every task the bundle's tasks name that is neither
// in the bundle nor withheld by the export, and notes the withheld ones.
func checkRelatives(b *stewardv1.AuditBundle, tasks []*bundleTask, r *Report) {
	present := map[string]bool{}
	for _, bt := range b.Tasks {
		if present[bt.TaskId] {
			r.fail(SectionEvents, "task "+bt.TaskId, "the bundle holds it twice")
		}
		present[bt.TaskId] = true
	}
	withheld := map[string]bool{}
	for _, w := range b.Withheld {
		withheld[w.TaskId] = true
		r.note("task %s was withheld by the export (%s): not verified; the export's word, not signed", w.TaskId, w.Reason)
	}
	for _, t := range tasks {
		for _, id := range t.relatives() {
			if !present[id] && !withheld[id] {
				r.fail(SectionEvents, "task "+id, "task %s names it (its parent, origin or sub-task), but it is neither in the bundle nor withheld by the export", t.id)
				withheld[id] = true // named once
			}
		}
	}
}

// relatives are the tasks t's events name.
func (t *bundleTask) relatives() []string {
	out := TaskRelatives(t.task)
	for _, rec := range t.recs {
		out = append(out, EventRelatives(rec.Event)...)
	}
	return out
}

// TaskHead is one task's chain as verified, to compare with VerifyTask's
// on the server: a bundle cut short at its tail, receipt and all, verifies
// on its own, so only the head the server holds shows it.
type TaskHead struct {
	ID           string
	Events       int
	LastSequence uint64
	Head         []byte
}

func (h TaskHead) String() string {
	return fmt.Sprintf("task %s: %d events, last sequence %d, head %x", h.ID, h.Events, h.LastSequence, h.Head)
}
