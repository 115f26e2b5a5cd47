package taskstore

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// copyOut returns a copy of the entry's task for a caller to keep (Load,
// Update). The copy shares the ledger's action entries with the fold: the
// fold never changes an entry in place, it replaces it ("views handed out
// earlier may share it", pkg/task), so the caller's copy stays as it was
// while the fold moves on, and a read costs the size of the task less its
// ledger rather than a deep copy of every action ever proposed. In
// return a caller must not change an action of a task it was handed: it
// copies the action first (proto.CloneOf). In race-detector builds (the
// tests), a change to a shared action is caught the next time the task is
// read or written.
func (e *entry) copyOut() *stewardv1.Task {
	e.checkLent()
	t := e.task
	actions := t.Actions
	t.Actions = nil
	c := proto.CloneOf(t)
	t.Actions = actions
	c.Actions = append([]*stewardv1.Action(nil), actions...)
	if guardLent {
		if e.lent == nil {
			e.lent = map[*stewardv1.Action]*stewardv1.Action{}
		}
		for _, a := range actions {
			if _, ok := e.lent[a]; !ok {
				e.lent[a] = proto.CloneOf(a)
			}
		}
	}
	return c
}

// checkLent panics, in race-detector builds, when an action the entry handed out is
// no longer what it was: a caller changed the fold's own entry.
func (e *entry) checkLent() {
	if len(e.lent) == 0 || e.task == nil {
		return
	}
	kept := make(map[*stewardv1.Action]*stewardv1.Action, len(e.lent))
	for _, a := range e.task.Actions {
		snap, ok := e.lent[a]
		if !ok {
			continue
		}
		if !proto.Equal(a, snap) {
			panic(fmt.Sprintf("taskstore: action %s of task %s, shared by Load or Update, was changed by its caller: copy an action before changing it", a.ActionId, e.task.GetContract().GetTaskId()))
		}
		kept[a] = snap
	}
	e.lent = kept // entries the fold has replaced are the caller's alone
}
