package task_test

import (
	"fmt"

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
