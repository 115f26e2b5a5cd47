package control_test

import (
	"crypto/rand"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

// TestPlanActionIDsAreNotOfThePlainRequest: a plan step's action id, shown
// to every reader of the task, derives from a keyed digest of its request
// hash, not from the plain hash one who guesses the parameters could
// compute. A plane that proposed a step and crashed before recording it
// started, and came back under another key (or from before the ids were
// keyed), finds the step's action by what the task records: nothing is
// proposed twice.
func TestPlanActionIDsAreNotOfThePlainRequest(t *testing.T) {
	var crashed atomic.Bool
	crashed.Store(true)
	r := newHarness(t, control.AfterStepProposal(func(step string) error {
		if crashed.Load() {
			return errors.New("crash after proposing step " + step)
		}
		return nil
	}))
	id := r.planTask(t, "ids", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", map[string]string{"q": "'guessable'"}),
	}})
	proposed := r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Actions) == 1 }).Actions[0]
	plain := action.ID(id, "plan-a-1-"+proposed.RequestHash)
	if proposed.ActionId == plain || strings.Contains(proposed.ProposalId, proposed.RequestHash) {
		t.Errorf("step a's action %s (proposal %s) derives from its plain request hash %s", proposed.ActionId, proposed.ProposalId, proposed.RequestHash)
	}

	seed := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		t.Fatal(err)
	}
	rotated, err := secret.New(seed)
	if err != nil {
		t.Fatal(err)
	}
	r.sealer = rotated
	crashed.Store(false)
	r.redeliver(t)
	tk, a := r.step(id, "a", stepRunning)
	if r.Count(id, event.TypeActionProposed) != 1 || len(tk.Actions) != 1 || a.ActionId != proposed.ActionId || len(task.FindStep(tk, "a").ActionIds) != 1 {
		t.Fatalf("after a crash and a new key: %d proposals, step a runs %s, want the one proposed, %s", r.Count(id, event.TypeActionProposed), a.ActionId, proposed.ActionId)
	}
}
