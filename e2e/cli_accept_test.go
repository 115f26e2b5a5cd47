package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestCLIAcceptance: the acceptance owner decides a produced result with
// `tasks accept|return`, found on the log in their name — returned with
// what must change (TaskReturned), then accepted (TaskAccepted) — while
// anyone else is refused, a return says what must change, and a decision
// bound to a round the agent has produced past decides nothing.
func TestCLIAcceptance(t *testing.T) {
	ctx := context.Background()
	h := startSteward(t, setup{})
	k := contract()
	k.AcceptanceOwnerRef = "user:owner"
	k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "tone", Description: "reads well", RequiresReviewer: true}}
	taskID := h.create(t, "cli-accept-1", k)
	produce := func() {
		t.Helper()
		if _, err := h.agent.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: taskID})); err != nil {
			t.Fatal(err)
		}
	}
	produce()
	owner, other := newPerson(t, h.url, ownerToken), newPerson(t, h.url, reviewerToken)
	if out, _ := owner.run(0, "tasks", "show", taskID); !strings.Contains(out, "round 1, produced") {
		t.Errorf("tasks show does not name the round to decide:\n%s", out)
	}
	other.run(4, "tasks", "accept", taskID)
	if _, stderr := owner.run(2, "tasks", "return", taskID); !strings.Contains(stderr, "--reason is required") {
		t.Errorf("a return without a reason: %s", stderr)
	}
	owner.run(0, "tasks", "return", taskID, "--reason", "cite the incidents", "--reason", "shorter", "--round", "1")
	if ev := lastOfType(t, h, taskID, event.TypeTaskReturned); ev.Actor.GetPrincipal() != "user:owner" ||
		!slices.Equal(ev.GetTaskReturned().GetReasons(), []string{"cite the incidents", "shorter"}) {
		t.Fatalf("the return on the log: %v", ev)
	}
	waitStatus(t, h.agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)

	produce()
	if _, stderr := owner.run(4, "tasks", "accept", taskID, "--round", "1"); !strings.Contains(stderr, "round") {
		t.Errorf("an acceptance of the round produced past: %s", stderr)
	}
	out, _ := owner.run(0, "tasks", "accept", taskID, "--round", "2", "--reason", "reads well now", "-o", "json")
	var accepted stewardv1.Task
	if err := protojson.Unmarshal([]byte(out), &accepted); err != nil || accepted.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED {
		t.Fatalf("tasks accept -o json: %v\n%s", err, out)
	}
	if ev := lastOfType(t, h, taskID, event.TypeTaskAccepted); ev.Actor.GetPrincipal() != "user:owner" || ev.GetTaskAccepted().GetRound() != 2 {
		t.Fatalf("the acceptance on the log: %v", ev)
	}
}
