package taskstore

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/raceguard"
	"github.com/steward-run/steward/pkg/task"
)

// copyOut returns a copy of the entry's task for a caller to keep (Load,
// Update): a new task with lists of its own, whose parts — its contract,
// its progress, its action entries and every other message it holds
// (task.Parts) — it shares with the fold. The fold never changes a part
// in place, it replaces it, so the caller's copy stays as it was while
// the fold moves on, and a read costs the task's top level and its lists
// rather than a deep copy of everything the task holds. In return a
// caller must not change a part of a task it was handed: it may set the
// task's own fields and change its lists, but copies a part
// (proto.CloneOf) before changing it. In race-detector builds (the
// tests), a change to a shared part is caught the next time the task is
// read or written.
func (e *entry) copyOut() *stewardv1.Task {
	e.checkLent()
	e.lend()
	return shallowTask(e.task)
}

// lend notes, in race-detector builds, a copy of each part of the fold
// not noted yet: a part a caller now shares with it (copyOut, take), for
// checkLent.
func (e *entry) lend() {
	if !raceguard.On || e.task == nil {
		return
	}
	if e.lent == nil {
		e.lent = map[proto.Message]proto.Message{}
	}
	task.Parts(e.task, func(part proto.Message, _ func() string) {
		if _, ok := e.lent[part]; !ok {
			e.lent[part] = proto.Clone(part)
		}
	})
}

// checkLent panics, in race-detector builds, when a part the entry shares
// is no longer what it was: a caller changed the fold's own part, handed
// out with a task or written in an event (or the fold did, which
// pkg/task's own check catches first).
func (e *entry) checkLent() {
	if len(e.lent) == 0 || e.task == nil {
		return
	}
	kept := make(map[proto.Message]proto.Message, len(e.lent))
	task.Parts(e.task, func(part proto.Message, name func() string) {
		snap, ok := e.lent[part]
		if !ok {
			return
		}
		if !proto.Equal(part, snap) {
			panic(fmt.Sprintf("taskstore: %s of task %s, shared with a caller (a task Load or Update handed out, or an event a write handed over), was changed by it: copy it before changing it", name(), e.task.GetContract().GetTaskId()))
		}
		kept[part] = snap
	})
	e.lent = kept // parts the fold has replaced are the caller's alone
}
