package task_test

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// Check a command against the fold before appending it: a resume of a
// cancelled task is refused, and the task is left as it was.
func ExampleApply() {
	t := &stewardv1.Task{}
	// The control plane records a task's lifecycle.
	meta := event.Meta{TaskID: "t1", Actor: &stewardv1.Actor{Principal: "user:a", Plane: event.PlaneControl}}
	for i, p := range []event.Payload{&stewardv1.TaskCreated{}, &stewardv1.TaskCancelled{Reason: "not needed"}} {
		ev, _ := event.New(meta, p)
		if err := task.Apply(t, ev, uint64(i+1)); err != nil {
			panic(err)
		}
	}
	resume, _ := event.New(meta, &stewardv1.TaskResumed{})
	fmt.Println(task.Apply(t, resume, 0))
	fmt.Println(task.StatusName(t.Status))
	// Output:
	// cannot resume task t1: it is cancelled
	// cancelled
}

// An approval that needs two people is decided by the second distinct
// approval; the first is a vote that leaves it open.
func ExampleCastVote() {
	ap := &stewardv1.Approval{ApprovalId: "apv-1", RequiredApprovals: 2}
	approve := stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE
	for _, who := range []string{"user:bo", "user:di"} {
		decided := task.CastVote(ap, &stewardv1.ApprovalDecided{ApprovalId: "apv-1", Decision: approve, DecidedBy: who}, nil)
		fmt.Println(who, "decided it:", decided)
	}
	fmt.Println(task.Approvers(ap), "decided by", ap.DecidedBy)
	// Output:
	// user:bo decided it: false
	// user:di decided it: true
	// [user:bo user:di] decided by user:di
}

// The parts of a task are what a copy of it may share with it: the fold
// replaces a part rather than change it, so the copy keeps what it saw.
func ExampleParts() {
	t := &stewardv1.Task{Contract: &stewardv1.TaskContract{TaskId: "t1"}, Actions: []*stewardv1.Action{{ActionId: "a1"}}}
	var names []string
	task.Parts(t, func(_ proto.Message, name func() string) { names = append(names, name()) })
	slices.Sort(names) // Parts reads the fields in no set order
	fmt.Println(names)
	// Output:
	// [action a1 contract]
}
