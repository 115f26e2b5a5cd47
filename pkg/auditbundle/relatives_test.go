package auditbundle

import (
	"strings"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestEveryTaskNamedIsThere: a task the events name — the parent, a
// fork's origin, a plan's sub-task, one whose budget was reserved — must
// be in the bundle or withheld by the export (a note), else it fails
// under events naming it; a task held twice fails too.
func TestEveryTaskNamedIsThere(t *testing.T) {
	root := &bundleTask{id: "root", task: &stewardv1.Task{
		Contract:   &stewardv1.TaskContract{TaskId: "root", ParentTaskId: "parent"},
		ForkedFrom: &stewardv1.ForkOrigin{ParentTaskId: "origin"},
		Plan:       &stewardv1.PlanState{Steps: []*stewardv1.PlanStepState{{SubTaskId: "step"}}, Retired: []*stewardv1.PlanStepState{{ItemSubTaskIds: []string{"item"}}}},
	}, recs: []*stewardv1.EventRecord{{Event: &stewardv1.Event{Payload: &stewardv1.Event_BudgetConsumed{BudgetConsumed: &stewardv1.BudgetConsumed{Source: "reserved for delegated task reserved"}}}}}}
	b := &stewardv1.AuditBundle{Tasks: []*stewardv1.BundleTask{{TaskId: "root"}, {TaskId: "parent"}, {TaskId: "step"}},
		Withheld: []*stewardv1.WithheldTask{{TaskId: "origin", Reason: "the exporter may not read it"}}}
	r := &Report{}
	checkRelatives(b, []*bundleTask{root}, r)
	var missing []string
	for _, f := range r.Failures {
		if f.Section != SectionEvents || !strings.Contains(f.Reason, "task root names it") {
			t.Errorf("failure %v", f)
		}
		missing = append(missing, f.Item)
	}
	if strings.Join(missing, ",") != "task item,task reserved" {
		t.Errorf("missing %v, want the plan's retired item's sub-task and the reserved one", missing)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "task origin was withheld by the export (the exporter may not read it)") {
		t.Errorf("notes %v", r.Notes)
	}
	b.Tasks = append(b.Tasks, &stewardv1.BundleTask{TaskId: "step"})
	r = &Report{}
	checkRelatives(b, nil, r)
	if len(r.Failures) != 1 || r.Failures[0].Item != "task step" || !strings.Contains(r.Failures[0].Reason, "twice") {
		t.Errorf("a task held twice: %v", r.Failures)
	}
}

// TestSequencesStrictlyIncrease: a task's stream sequences, which no
// signature covers, must at least strictly increase.
func TestSequencesStrictlyIncrease(t *testing.T) {
	for _, seqs := range [][]uint64{{0}, {3, 3}, {4, 2}} {
		bt := &stewardv1.BundleTask{TaskId: "t"}
		for _, s := range seqs {
			bt.Events = append(bt.Events, &stewardv1.BundleEvent{Sequence: s, Data: []byte("x")})
		}
		r := &Report{}
		if verifyTask(bt, nil, r) != nil || len(r.Failures) != 1 || r.Failures[0].Section != SectionEvents ||
			!strings.HasPrefix(r.Failures[0].Item, "task t event") || !strings.Contains(r.Failures[0].Reason, "strictly increase") {
			t.Errorf("sequences %v: %v", seqs, r.Failures)
		}
	}
}
