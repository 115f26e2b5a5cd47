package e2e_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/sdk/go/steward"
)

// TestTheSDKWaitsByTheServersRule holds the Go SDK's Moving, which may not
// import the server's packages, to the server's task.Moving over every
// action and task status, a compensation and not: a client that judged
// otherwise would call a wait the server answers at once again and again,
// or stop before what it was promised.
func TestTheSDKWaitsByTheServersRule(t *testing.T) {
	for as := range stewardv1.ActionStatus_name {
		for ts := range stewardv1.TaskStatus_name {
			for _, compensates := range []string{"", "act-1"} {
				a := &stewardv1.Action{Status: stewardv1.ActionStatus(as), Compensates: compensates}
				tk := &stewardv1.Task{Status: stewardv1.TaskStatus(ts)}
				if got, want := steward.Moving(a, tk.Status), task.Moving(tk, a); got != want {
					t.Errorf("%v in a %v task (compensates %q): the SDK says moving %v, the server %v", a.Status, tk.Status, compensates, got, want)
				}
			}
		}
	}
}
