package task

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// keepShared returns, in race-detector builds, a deep copy of a, the
// entry a change replaces, for checkShared; nil otherwise.
func keepShared(a *stewardv1.Action) *stewardv1.Action {
	if !guardShared {
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
	if guardShared && !proto.Equal(a, kept) {
		panic(fmt.Sprintf("task: %s changed a sub-message of action %s in place, which the entry it replaced shares: set a new one instead", ev.Type, a.ActionId))
	}
}
