package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// quotaFlags are small quotas, so that a test reaches each.
var quotaFlags = []string{
	"--quota-running-tasks-per-principal=3",
	"--quota-plan-bytes-per-principal=300",
	"--quota-content-bytes-per-tenant=1000",
}

// refusedQuota fails t unless err is resource_exhausted naming quota.
func refusedQuota(t *testing.T, err error, quota string) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted || !strings.Contains(ce.Message(), quota) {
		t.Fatalf("got %v, want resource_exhausted naming %s", err, quota)
	}
}

// TestQuotasRefuseNamingTheQuota runs the binary with small quotas: each
// refuses with resource_exhausted naming it and records nothing; after a
// restart the running tasks are still counted, and a task that ends
// frees its slot for the very request refused before.
func TestQuotasRefuseNamingTheQuota(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool), flags: quotaFlags})
	ctx := context.Background()
	k := contract()
	k.AllowedTools = []string{"search", "wire"}
	ids := []string{h.create(t, "quota-1", k), h.create(t, "quota-2", k), h.create(t, "quota-3", k)}
	createFourth := func(c authed) error {
		_, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "quota-4", Contract: k}))
		return err
	}
	running := `quota "running tasks per principal" (3) reached`
	refusedQuota(t, createFourth(h.agent), running)
	countTasks := func(c authed) int {
		resp, err := c.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{PageSize: 100}))
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Msg.Tasks)
	}
	if n := countTasks(h.agent); n != 3 {
		t.Fatalf("%d tasks after the refusal, want 3", n)
	}

	// Plan bytes: the first plan fits, a larger one on another task does not.
	if _, err := h.agent.tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: ids[0], Plan: searchPlan()})); err != nil {
		t.Fatal(err)
	}
	big := searchPlan()
	big.Steps[0].GetAction().Target = "index:" + strings.Repeat("x", 240)
	_, err := h.agent.tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: ids[1], Plan: big}))
	refusedQuota(t, err, `quota "plan bytes per principal" (300) reached`)
	if tk := getTask(t, h.agent.clients, ids[1]); tk.Plan != nil {
		t.Fatalf("refused plan recorded: version %d", tk.Plan.Version)
	}

	// Stored content: 600 bytes fit under 1000, 600 more do not.
	artifact := func(b byte) error {
		_, err := h.agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{
			TaskId: ids[2], Name: "report-" + string(b), MediaType: "text/plain", Content: bytes.Repeat([]byte{b}, 600)}))
		return err
	}
	if err := artifact('a'); err != nil {
		t.Fatal(err)
	}
	refusedQuota(t, artifact('b'), `quota "stored content bytes per tenant" (1000) reached`)
	if n := len(getTask(t, h.agent.clients, ids[2]).Artifacts); n != 1 {
		t.Fatalf("%d artifacts after the refusal, want 1", n)
	}

	// A restart counts the running tasks again from the log.
	h.proc.stop(t)
	restarted := startBinary(t, filepath.Join(h.dir, "data"), append([]string{
		"--auth", filepath.Join(h.dir, "tokens.json"), "--tools", filepath.Join(h.dir, "tools.json")}, quotaFlags...)...)
	agent := withToken(restarted.url, agentToken)
	refusedQuota(t, createFourth(agent), running)
	if _, err := agent.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: ids[1], Reason: "make room"})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, agent.clients, ids[1], stewardv1.TaskStatus_TASK_STATUS_CANCELLED)
	if err := createFourth(agent); err != nil {
		t.Fatalf("the refused request, once a task ended: %v", err)
	}
	if n := countTasks(agent); n != 4 {
		t.Fatalf("%d tasks, want 4", n)
	}
}

// quotaChecks is the row of docs/errors.md about quotas: checked on a
// server of its own, whose quota is small enough to reach.
func quotaChecks() map[string]tableCheck {
	return map[string]tableCheck{
		"`CreateTask` or `DelegateTask` past a running-tasks quota, `SubmitPlan` past a plan-bytes quota or whose sub-tasks would pass a running-tasks quota, `SubmitArtifact` past a stored-content quota, of the caller or its tenant ([quotas.md](quotas.md))": func(t *testing.T, _ *harness) []error {
			c := actingAs(startInProcess(t, "--quota-running-tasks-per-principal=1"), "user:quota")
			createTask(t, c, "table-quota-1")
			_, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "table-quota-2", Contract: contract()}))
			return []error{err}
		},
	}
}
