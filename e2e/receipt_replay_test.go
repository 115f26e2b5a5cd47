package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/audit"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestReceiptMatchesReplay takes a task through a tool call, an artifact,
// a return by its acceptance owner and an acceptance on the real binary;
// then rebuilds the receipt offline from the exported log, after
// verifying its hash chain, and compares it with the one `steward
// receipt` printed. Only the stream sequence differs: an exported file
// does not carry it.
func TestReceiptMatchesReplay(t *testing.T) {
	tool := stewardtest.StartTool(t)
	dir := t.TempDir()
	tools := fmt.Sprintf(`{"name": "search", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}}`, tool.URL+"/search")
	h := startSteward(t, setup{tools: []string{tools}})
	agent, owner := h.agent, h.owner
	ctx := context.Background()

	k := contract()
	k.AllowedTools, k.AcceptanceOwnerRef = []string{"search"}, "user:owner"
	k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{
		{Id: "has-report", Expression: `"report" in artifacts && artifacts["report"].size > 0`},
		{Id: "searched", Expression: `actions.exists(a, a.tool == "search" && a.status == "succeeded")`},
	}
	taskID := h.create(t, "replayed", k)
	a := propose(t, agent, taskID, "s1", "search", map[string]any{"q": "incidents"})
	waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	submit := func(content string) {
		t.Helper()
		if _, err := agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{
			TaskId: taskID, Name: "report", MediaType: "text/markdown", Content: []byte(content), ActionId: a.ActionId,
		})); err != nil {
			t.Fatal(err)
		}
	}
	produce := func() *stewardv1.AcceptanceRound {
		t.Helper()
		resp, err := agent.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: taskID}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Msg.Round
	}
	submit("# Incidents\nthree last week")
	if r := produce(); r.Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_PENDING {
		t.Fatalf("round 1: %v", r)
	}
	if _, err := owner.tasks.ReturnTask(ctx, connect.NewRequest(&stewardv1.ReturnTaskRequest{TaskId: taskID, Reasons: []string{"name the services"}})); err != nil {
		t.Fatal(err)
	}
	submit("# Incidents\nthree last week: api, db, dns")
	produce()
	if _, err := owner.tasks.AcceptTask(ctx, connect.NewRequest(&stewardv1.AcceptTaskRequest{TaskId: taskID, Reason: "thanks"})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_ACCEPTED)

	var printed stewardv1.Receipt
	out := run(t, 0, "receipt", "--task", taskID, "--format", "json", "--addr", h.url, "--token", agentToken)
	if err := protojson.Unmarshal([]byte(out), &printed); err != nil {
		t.Fatalf("not a receipt: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "task.events")
	run(t, 0, "audit", "export", "--task", taskID, "--out", file, "--addr", h.url, "--token", agentToken)

	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := audit.ReadEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	if rep := audit.Verify(taskID, events); !rep.OK() {
		t.Fatalf("the exported log does not verify: %v", rep.Break)
	}
	var recs []*stewardv1.EventRecord
	for _, d := range events {
		ev := &stewardv1.Event{}
		if err := proto.Unmarshal(d, ev); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &stewardv1.EventRecord{Event: ev})
	}
	replayed, err := state.BuildReceipt(recs)
	if err != nil {
		t.Fatal(err)
	}
	if printed.LastSequence == 0 {
		t.Fatal("the printed receipt names no stream sequence")
	}
	printed.LastSequence = 0
	if !proto.Equal(&printed, replayed) {
		t.Fatalf("the receipt differs from the one rebuilt from the replay:\nprinted  %v\nreplayed %v", &printed, replayed)
	}
	rounds := printed.AcceptanceRounds
	if printed.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED || printed.Partial || len(rounds) != 2 ||
		rounds[0].Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_RETURNED || rounds[0].Reasons[0] != "name the services" ||
		rounds[1].Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED || rounds[1].DecidedBy != "user:owner" ||
		len(printed.AcceptanceChecks) != 4 || len(printed.Artifacts) != 2 || printed.Artifacts[1].Version != 2 || printed.Credential == nil {
		t.Fatalf("the receipt does not show both rounds, their checks, both artifact versions and the credential: %v", &printed)
	}
}
