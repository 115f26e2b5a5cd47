package e2e_test

import (
	"context"
	"fmt"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// startChecks are the rows of the errors table about a task not started
// yet (services/control/started.go).
func startChecks() map[string]tableCheck {
	ctx := context.Background()
	return map[string]tableCheck{
		"a proposal, a plan or a question for a task just created and not yet started (pending)": func(t *testing.T, e *harness) []error {
			// Proposals sent the moment CreateTask answers are taken: none
			// sees the pending task the control plane starts a moment
			// later. A task that stays pending is not made from outside
			// (control's own reaction starts it), so the code past the
			// wait is checked through the one translation table.
			for i := range 10 {
				resp, err := e.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: fmt.Sprint("table-fresh-", i), Contract: governed()}))
				if err != nil {
					t.Fatal(err)
				}
				if err := e.propose(t, resp.Msg.Task.Contract.TaskId, "", "search", "", map[string]any{"q": "x"}, nil); err != nil {
					t.Fatalf("a proposal right after CreateTask: %v", err)
				}
			}
			return []error{translated(errs.New(errs.Unavailable, "task x has not started yet (it is pending); try again"))}
		},
	}
}
