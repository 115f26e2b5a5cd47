package e2e_test

import (
	"fmt"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestReadsInFlightAtAKillAreSentAgain kills the binary (SIGKILL) while
// five reads are at their tool, and starts it again on the same data: a
// read has no side effect, so the retry rules let it be sent again blind,
// and recovery follows them — each read is sent once more, with the same
// op_key, and ends succeeded as its second attempt, with no unknown
// outcome on the ledger and nobody settling it. (Before, each ended
// unknown and waited for SettleAction.)
func TestReadsInFlightAtAKillAreSentAgain(t *testing.T) {
	// The first call of each key is held until the caller is gone; the
	// next one is answered at once.
	tool := stewardtest.StartTool(t).ScriptPerKey("/read", stewardtest.Late)
	tools := writeFile(t, t.TempDir(), "tools.json", fmt.Sprintf(`{"tools": [{"name": "search", "version": "1", "effectClass": "EFFECT_CLASS_READ",
	  "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "timeout": "120s", "http": {"url": %q}}]}`, tool.URL+"/read"))
	data := t.TempDir()
	p := startBinary(t, data, "--tools", tools)
	c := newClients(p.url)
	taskID := createTask(t, c, "lost-reads").Contract.TaskId
	waitStarted(t, c, taskID)
	const reads = 5
	var actions []*stewardv1.Action
	for i := range reads {
		actions = append(actions, propose(t, authed{clients: c}, taskID, fmt.Sprintf("read-%d", i), "search", map[string]any{"q": float64(i)}))
	}
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		return tool.CallsTo("/read") == reads, fmt.Sprintf("%d of %d reads reached the tool", tool.CallsTo("/read"), reads)
	})
	p.kill()

	p = startBinary(t, data, "--tools", tools)
	c = newClients(p.url)
	for _, want := range actions {
		_, a := waitAction(t, c, taskID, want.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if a.SettledBy != "" {
			t.Errorf("read %s was settled by %q; want it succeeded by its retry", a.ProposalId, a.SettledBy)
		}
		if a.Attempt != 2 {
			t.Errorf("read %s succeeded on attempt %d; want 2 (the lost one, then the retry)", a.ProposalId, a.Attempt)
		}
		if n := tool.CallsFor(a.OpKey); n != 2 {
			t.Errorf("the tool got %d requests for read %s's op_key; want 2", n, a.ProposalId)
		}
	}
	history := replayTask(t, c, taskID)
	for _, a := range actions {
		if rec := unknownOutcome(history, a.ActionId); rec != nil {
			t.Errorf("read %s has an unknown outcome on the ledger: %q", a.ProposalId, rec.Event.GetActionOutcomeRecorded().GetOutcome().GetReason())
		}
	}
	verifyChain(t, c, taskID, len(history))
}
