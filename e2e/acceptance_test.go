package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestProducedIsNotAccepted runs the real binary through acceptance:
// produced with a failing artifact, the task goes back to running; fixed,
// it waits for its acceptance owner, who returns it once with a reason and
// accepts the revision; nobody else may decide. Every round is kept.
func TestProducedIsNotAccepted(t *testing.T) {
	p := startBinary(t, t.TempDir())
	ctx := context.Background()
	agent, owner, other := actingAs(p.url, "agent:writer"), actingAs(p.url, "user:rev"), actingAs(p.url, "user:eve")

	k := contract()
	k.AcceptanceOwnerRef, k.SeparationOfDuties = "user:rev", true
	k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{
		{Id: "report", Description: "there is a report", Expression: `"report" in artifacts && artifacts["report"].size > 0`},
		{Id: "summary", Description: "the summary counts three incidents", Expression: `artifacts["summary"].json.count == 3`},
		{Id: "tone", Description: "reads well to the on-call team", RequiresReviewer: true},
	}
	created, err := agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "acceptance", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := created.Msg.Task.Contract.TaskId
	waitStatus(t, agent, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)

	submit := func(name, mediaType, content string) string {
		t.Helper()
		resp, err := agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{
			TaskId: taskID, Name: name, MediaType: mediaType, Content: []byte(content)}))
		if err != nil {
			t.Fatalf("submit %s: %v", name, err)
		}
		return fmt.Sprintf("%s@%d", resp.Msg.Artifact.Name, resp.Msg.Artifact.Version)
	}
	produce := func(want stewardv1.TaskStatus) *stewardv1.AcceptanceRound {
		t.Helper()
		resp, err := agent.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: taskID}))
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		if resp.Msg.Task.Status != want {
			t.Fatalf("produced round %d: task is %s (%s), want %s", resp.Msg.Round.Round, resp.Msg.Task.Status, resp.Msg.Task.StatusReason, want)
		}
		return resp.Msg.Round
	}

	// Too large to send inline: refused, naming the field.
	_, err = agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{
		TaskId: taskID, Name: "dump", MediaType: "text/plain", Content: bytes.Repeat([]byte("x"), 512<<10+1)}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "by reference") {
		t.Fatalf("oversized inline artifact: %v, want resource_exhausted suggesting a reference", err)
	}

	// Round 1: the summary counts two; the checks fail and the task runs on.
	submit("report", "text/markdown", "# Incidents last week\n")
	submit("summary", "application/json", `{"count": 2, "incidents": ["db", "cdn"]}`)
	r1 := produce(stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	if r1.Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED || !r1.Checks[0].Passed || r1.Checks[1].Passed {
		t.Fatalf("round 1: %v", r1)
	}

	// Round 2: fixed; it waits for the owner, who returns it.
	if ref := submit("summary", "application/json", `{"count": 3, "incidents": ["db", "cdn", "dns"]}`); ref != "summary@2" {
		t.Fatalf("revised summary is %s", ref)
	}
	if r2 := produce(stewardv1.TaskStatus_TASK_STATUS_PRODUCED); r2.Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_PENDING {
		t.Fatalf("round 2: %v", r2)
	}
	ret, err := owner.tasks.ReturnTask(ctx, connect.NewRequest(&stewardv1.ReturnTaskRequest{TaskId: taskID, Reasons: []string{"the report does not mention the DNS incident"}}))
	if err != nil {
		t.Fatal(err)
	}
	if ret.Msg.Task.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("after return: %s", ret.Msg.Task.Status)
	}

	// Round 3: revised; only the owner may accept it.
	submit("report", "text/markdown", "# Incidents last week\n\nDB, CDN and DNS.\n")
	produce(stewardv1.TaskStatus_TASK_STATUS_PRODUCED)
	for _, who := range []clients{other, agent} {
		_, err := who.tasks.AcceptTask(ctx, connect.NewRequest(&stewardv1.AcceptTaskRequest{TaskId: taskID}))
		if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "user:rev") {
			t.Fatalf("accept by someone else: %v, want permission_denied naming user:rev", err)
		}
	}
	if _, err := owner.tasks.AcceptTask(ctx, connect.NewRequest(&stewardv1.AcceptTaskRequest{TaskId: taskID, Reason: "complete"})); err != nil {
		t.Fatal(err)
	}

	tk := waitStatus(t, agent, taskID, stewardv1.TaskStatus_TASK_STATUS_ACCEPTED)
	want := []struct {
		decision  stewardv1.AcceptanceDecision
		decidedBy string
		artifacts string
	}{
		{stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED, "", "report@1 summary@1"},
		{stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_RETURNED, "user:rev", "report@1 summary@2"},
		{stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED, "user:rev", "report@2 summary@2"},
	}
	if len(tk.Acceptance) != len(want) {
		t.Fatalf("%d acceptance rounds, want %d: %v", len(tk.Acceptance), len(want), tk.Acceptance)
	}
	for i, w := range want {
		r := tk.Acceptance[i]
		if r.Round != uint32(i+1) || r.Decision != w.decision || r.DecidedBy != w.decidedBy || strings.Join(r.Artifacts, " ") != w.artifacts ||
			r.ProducedBy != "agent:writer" || len(r.Checks) != 3 {
			t.Errorf("round %d: %v", i+1, r)
		}
	}
	if got := tk.Acceptance[1].Reasons; len(got) != 1 || !strings.Contains(got[0], "DNS") {
		t.Errorf("round 2's reasons: %v", got)
	}
}

// actingAs returns clients that name who in the Steward-Principal header,
// as a caller does against a server without --auth.
func actingAs(url, who string) clients {
	return newClients(url, connect.WithInterceptors(principalHeader(who)))
}

type principalHeader string

func (h principalHeader) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Steward-Principal", string(h))
		return next(ctx, req)
	}
}

func (h principalHeader) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Steward-Principal", string(h))
		return conn
	}
}

func (h principalHeader) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
