package task

import (
	"slices"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestRevisedKeepsWhatStarted: the states a revision meets are set here
// by hand, without the step events that would bring them about. A kept step keeps its state under the new version; a
// changed step that started keeps its state and the version it started
// under; a changed step not started starts afresh; a left-out step is
// withdrawn unless it had finished, and kept on the record either way.
func TestRevisedKeepsWhatStarted(t *testing.T) {
	st := func(id string, s stewardv1.StepStatus, actions ...string) *stewardv1.PlanStepState {
		return &stewardv1.PlanStepState{StepId: id, Status: s, ActionIds: actions, Attempts: uint32(len(actions)), Version: 1}
	}
	cur := &stewardv1.PlanState{Version: 1, Steps: []*stewardv1.PlanStepState{
		st("kept", stepRunning, "act-1"),
		st("changed_running", stepRunning, "act-2"),
		st("changed_pending", stepPending),
		st("gone_done", stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "act-3"),
		st("gone_running", stepRunning, "act-4"),
	}}
	step := func(id string) *stewardv1.Step { return &stewardv1.Step{Id: id} }
	s := &stewardv1.PlanSubmitted{PlanHash: "h2",
		Plan: &stewardv1.Plan{Version: 2, Steps: []*stewardv1.Step{step("kept"), step("changed_running"), step("changed_pending"), step("new")}},
		Revision: &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"kept"}, Changed: []string{"changed_running", "changed_pending"},
			Added: []string{"new"}, Withdrawn: []string{"gone_done", "gone_running"}}}
	next := revised(cur, s, &stewardv1.Event{Actor: &stewardv1.Actor{Principal: "agent"}}, nil)
	want := map[string]struct {
		status  stewardv1.StepStatus
		version uint32
		actions int
	}{
		"kept":            {stepRunning, 2, 1},
		"changed_running": {stepRunning, 1, 1},
		"changed_pending": {stepPending, 2, 0},
		"new":             {stepPending, 2, 0},
		"gone_done":       {stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, 1, 1},
		"gone_running":    {stepWithdrawn, 1, 1},
	}
	for _, got := range append(next.Steps, next.Retired...) {
		w, ok := want[got.StepId]
		if !ok || got.Status != w.status || got.Version != w.version || len(got.ActionIds) != w.actions {
			t.Errorf("step %s = %v, want %+v", got.StepId, got, w)
		}
		delete(want, got.StepId)
	}
	if len(want) != 0 {
		t.Errorf("steps missing: %v", want)
	}
	if cur.Steps[0].Version != 1 || cur.Steps[4].Status != stepRunning {
		t.Error("revised changed the state it revised")
	}
	// The plan's own steps stand for their actions in progress.remaining;
	// a retired step's action in flight stands for itself.
	tk := &stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING, Plan: next, Actions: []*stewardv1.Action{
		{ActionId: "act-1", Status: stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED},
		{ActionId: "act-4", Status: stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED},
		{ActionId: "own", Status: stewardv1.ActionStatus_ACTION_STATUS_PROPOSED},
	}}
	followLedger(tk)
	got := tk.Progress.GetRemaining()
	wantRemaining := []string{"kept", "changed_running", "changed_pending", "new", "act-4", "own"}
	if !slices.Equal(got, wantRemaining) {
		t.Fatalf("remaining = %v, want %v", got, wantRemaining)
	}
}

// TestRevisedKeepsTheVersionAStepStartedUnder: a step that a revision
// changed while it was running keeps the version it started under; a
// later revision that leaves it as it is must not relabel it with its own
// version, or the plan driver would take what began under the first
// definition for what the latest one asks.
func TestRevisedKeepsTheVersionAStepStartedUnder(t *testing.T) {
	running := &stewardv1.PlanStepState{StepId: "s", Status: stepRunning, ActionIds: []string{"act-1"}, Attempts: 1, Version: 1}
	cur := &stewardv1.PlanState{Version: 1, Steps: []*stewardv1.PlanStepState{running}}
	step := []*stewardv1.Step{{Id: "s"}}
	v2 := revised(cur, &stewardv1.PlanSubmitted{PlanHash: "h2", Plan: &stewardv1.Plan{Version: 2, Steps: step},
		Revision: &stewardv1.PlanRevision{ReplacesVersion: 1, Changed: []string{"s"}}}, &stewardv1.Event{}, nil)
	if got := v2.Steps[0].Version; got != 1 {
		t.Fatalf("after a change, the running step's version = %d, want 1 (the one it started under)", got)
	}
	v3 := revised(v2, &stewardv1.PlanSubmitted{PlanHash: "h3", Plan: &stewardv1.Plan{Version: 3, Steps: step},
		Revision: &stewardv1.PlanRevision{ReplacesVersion: 2, Kept: []string{"s"}}}, &stewardv1.Event{}, nil)
	if got := v3.Steps[0].Version; got != 1 {
		t.Fatalf("kept unchanged from version 2, the step started under version 1 shows version %d, want 1", got)
	}
}

// TestRevisedRetiresWhatItLeavesBehind: actions proposed for steps and
// not yet recorded as theirs are retired with a step the revision
// changes or withdraws, and left to a kept one; a retry follows its
// original; a step added back, or changed afresh, starts after the
// attempts retired with it.
func TestRevisedRetiresWhatItLeavesBehind(t *testing.T) {
	cur := &stewardv1.PlanState{Version: 1, Steps: []*stewardv1.PlanStepState{
		{StepId: "kept", Status: stepPending, Version: 1},
		{StepId: "changed", Status: stepPending, Version: 1},
		{StepId: "gone", Status: stepPending, Version: 1},
		{StepId: "running", Status: stepRunning, Version: 1, Attempts: 1, ActionIds: []string{"act-run"}},
		{StepId: "ran", Status: stepRunning, Version: 1, Attempts: 1, ActionIds: []string{"act-ran"}},
	}}
	actions := []*stewardv1.Action{
		{ActionId: "act-kept", PlanStepId: "kept"},
		{ActionId: "act-changed", PlanStepId: "changed"},
		{ActionId: "act-gone", PlanStepId: "gone"},
		{ActionId: "act-run"}, {ActionId: "act-run-2", PlanStepId: "running", RetryOf: "act-run"},
		{ActionId: "act-ran"}, {ActionId: "act-ran-2", PlanStepId: "ran", RetryOf: "act-ran"},
		{ActionId: "act-agent"},
	}
	step := func(id string) *stewardv1.Step { return &stewardv1.Step{Id: id} }
	next := revised(cur, &stewardv1.PlanSubmitted{PlanHash: "h2",
		Plan:     &stewardv1.Plan{Version: 2, Steps: []*stewardv1.Step{step("kept"), step("changed"), step("running")}},
		Revision: &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"kept"}, Changed: []string{"changed", "running"}, Withdrawn: []string{"gone", "ran"}},
	}, &stewardv1.Event{}, actions)
	retired := map[string]bool{}
	for _, st := range next.Retired {
		for _, id := range st.ActionIds {
			retired[id] = st.Status == stepWithdrawn
		}
	}
	for id, want := range map[string]bool{"act-kept": false, "act-changed": true, "act-gone": true, "act-run-2": false, "act-ran": true, "act-ran-2": true, "act-agent": false} {
		if retired[id] != want {
			t.Errorf("%s retired withdrawn = %v, want %v (retired %v)", id, retired[id], want, next.Retired)
		}
	}
	if st := next.Steps[1]; st.StepId != "changed" || st.Status != stepPending || st.Attempts != 1 {
		t.Errorf("changed = %v: want pending after attempt 1, retired with its action", st)
	}
	// Added back, gone starts after the attempt retired with its action.
	v3 := revised(next, &stewardv1.PlanSubmitted{PlanHash: "h3",
		Plan:     &stewardv1.Plan{Version: 3, Steps: []*stewardv1.Step{step("kept"), step("changed"), step("running"), step("gone")}},
		Revision: &stewardv1.PlanRevision{ReplacesVersion: 2, Kept: []string{"kept", "changed", "running"}, Added: []string{"gone"}},
	}, &stewardv1.Event{}, actions)
	if st := v3.Steps[3]; st.StepId != "gone" || st.Attempts != 1 {
		t.Errorf("gone, added back = %v: want its attempts after the one withdrawn with it", st)
	}
}
