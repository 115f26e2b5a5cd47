package task

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/raceguard"
)

// keepShared returns, in race-detector builds, a deep copy of a, the
// entry a change replaces, for checkShared; nil otherwise.
func keepShared(a *stewardv1.Action) *stewardv1.Action {
	if !raceguard.On {
		return nil
	}
	return proto.CloneOf(a)
}

// checkShared panics, in race-detector builds, when a, the entry a change
// replaced, is no longer what keepShared kept: the change, made on a
// shallow copy of a (shallowAction), changed a sub-message the two share
// in place, and with it every view that holds a. A change must set a new
// sub-message instead.
func checkShared(a, kept *stewardv1.Action, ev *stewardv1.Event) {
	if raceguard.On && !proto.Equal(a, kept) {
		panic(fmt.Sprintf("task: %s changed a sub-message of action %s in place, which the entry it replaced shares: set a new one instead", ev.Type, a.ActionId))
	}
}

// keptPart is a part of a task (Parts) as it was before an event.
type keptPart struct {
	part, copy proto.Message
	name       func() string
}

// keepParts returns, in race-detector builds, a deep copy of each part of
// t but its actions (each change to one is checked on its own:
// checkShared), for checkParts; nil otherwise.
func keepParts(t *stewardv1.Task) []keptPart {
	if !raceguard.On {
		return nil
	}
	var kept []keptPart
	Parts(t, func(part proto.Message, name func() string) {
		if _, ok := part.(*stewardv1.Action); !ok {
			kept = append(kept, keptPart{part: part, copy: proto.Clone(part), name: name})
		}
	})
	return kept
}

// checkParts panics when a part of the task kept before ev was folded
// changed: the fold changed in place what a copy of the task handed out
// earlier may share (Parts). It must replace the part instead.
func checkParts(kept []keptPart, ev *stewardv1.Event) {
	for _, k := range kept {
		if !proto.Equal(k.part, k.copy) {
			panic(fmt.Sprintf("task: %s changed the task's %s in place, which copies of the task handed out earlier may share: replace it instead", ev.Type, k.name()))
		}
	}
}
