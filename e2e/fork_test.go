package e2e_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/audit"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestForkIsLinkedAndVerified forks a task with a decision on its record
// through the real binary: the fork names its parent and point, carries
// the decision, and runs on its own; `steward audit verify` checks the
// link against the parent's chain, and the check fails for a fork whose
// claimed state or point hash the parent's chain does not bear out.
func TestForkIsLinkedAndVerified(t *testing.T) {
	h := startSteward(t, setup{})
	ctx := context.Background()
	k := contract()
	parentID := h.create(t, "fork-parent", k)
	if _, err := h.agent.tasks.RecordDecision(ctx, connect.NewRequest(&stewardv1.RecordDecisionRequest{TaskId: parentID, Decision: &stewardv1.Decision{
		DecisionId: "d1", Call: &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-a"}, LedTo: &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}}}})); err != nil {
		t.Fatal(err)
	}
	parent := replayTask(t, h.agent.clients, parentID)
	at := parent[len(parent)-1].Sequence

	fork := &stewardv1.ForkTaskRequest{TaskId: parentID, AtSequence: at, Reason: "recompute with gpt-b", RequestId: "fork-e2e", MaxTokens: 1000}
	if _, err := h.viewer.tasks.ForkTask(ctx, connect.NewRequest(fork)); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("a fork by someone else than the agent: %v, want permission_denied", err)
	}
	resp, err := h.agent.tasks.ForkTask(ctx, connect.NewRequest(fork))
	if err != nil {
		t.Fatal(err)
	}
	forkID := resp.Msg.Task.Contract.TaskId
	tk := waitStatus(t, h.agent.clients, forkID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	if o := tk.ForkedFrom; o.GetParentTaskId() != parentID || o.AtSequence != at || len(tk.Decisions) != 1 || tk.Decisions[0].DecisionId != "d1" {
		t.Fatalf("the fork: forked from %v, decisions %v", o, tk.Decisions)
	}

	out := run(t, 0, "audit", "verify", "--task", forkID, "--addr", h.url, "--token", agentToken)
	if !strings.Contains(out, "fork of task "+parentID+" at sequence") || !strings.Contains(out, "link verified") {
		t.Fatalf("audit verify of the fork:\n%s", out)
	}

	// Its receipt names where it came from, and leaves the parent's calls
	// to the parent's receipt.
	receipt, err := h.agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: forkID}))
	if err != nil {
		t.Fatal(err)
	}
	if f := receipt.Msg.Receipt.ForkedFrom; f.GetParentTaskId() != parentID || len(receipt.Msg.Receipt.Calls) != 0 ||
		!strings.Contains(receipt.Msg.Markdown, "**Forked from:** task `"+parentID+"`") {
		t.Errorf("the fork's receipt: forked from %v, %d calls:\n%s", f, len(receipt.Msg.Receipt.Calls), receipt.Msg.Markdown)
	}

	// A fork claiming what its parent's chain does not bear out fails.
	history := replayTask(t, h.agent.clients, forkID)
	origin := audit.Fork(history[0].Event)
	var data [][]byte
	var seqs []uint64
	stream, err := h.agent.audit.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: parentID}))
	if err != nil {
		t.Fatal(err)
	}
	for stream.Receive() {
		data, seqs = append(data, stream.Msg().Data), append(seqs, stream.Msg().Record.Sequence)
	}
	stream.Close()
	if err := audit.VerifyFork(origin, data, seqs); err != nil {
		t.Fatalf("the real link: %v", err)
	}
	forged := proto.CloneOf(origin)
	forged.State.Decisions = nil
	if err := audit.VerifyFork(forged, data, seqs); err == nil || !strings.Contains(err.Error(), "state the fork started from") {
		t.Errorf("a forged state: %v", err)
	}
	moved := proto.CloneOf(origin)
	moved.AtHash = []byte("not the hash")
	if err := audit.VerifyFork(moved, data, seqs); err == nil || !strings.Contains(err.Error(), "another hash") {
		t.Errorf("a forged point: %v", err)
	}
}
