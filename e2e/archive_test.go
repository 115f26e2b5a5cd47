package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/embedded"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestArchiveEndToEnd runs the real binary with an archive: a task that
// called a tool (its request and result stored by reference) and its
// sub-task end; a live task does not (it stored the same request, and
// the same result, under its own keys), and its ended sub-task is kept with
// it, since the tree goes whole or not at all. `steward archive run` keeps all of
// them while they are younger than the retention, then archives the
// ended tree (not the live task) and purges it from the log, and its
// stored requests, results and policy inputs from their buckets, the live
// task's staying; GetTask,
// GetReceipt and `steward audit verify --task` still answer from the
// archive, the bundle verifies offline, and another tenant's caller gets
// not found. Retention is per tenant: globex's task stays while its own
// age has not passed, though the default's has. After the default
// tenant's erasure the bundle holds no content and still verifies.
func TestArchiveEndToEnd(t *testing.T) {
	tool := stewardtest.StartTool(t)
	dir := t.TempDir()
	data, store, natsAddr := filepath.Join(dir, "data"), filepath.Join(dir, "archive"), stewardtest.FreeAddr(t)
	tools := fmt.Sprintf(`{"tools": [{"name": "search", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}}]}`, tool.URL+"/search")
	p := startBinary(t, data, "--auth", writeFile(t, dir, "tokens.json", tokensFile), "--tools", writeFile(t, dir, "tools.json", tools),
		"--archive", store, "--nats-listen", natsAddr)
	agent := withToken(p.url, agentToken)
	ctx := context.Background()

	parentID, childID := endedTree(t, agent)
	live := createTask(t, agent.clients, "archive-live").Contract.TaskId
	waitStatus(t, agent.clients, live, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	same := propose(t, agent, live, "big", "search", map[string]any{"q": strings.Repeat("incident ", 200)}) // as the parent's
	waitAction(t, agent.clients, live, same.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	sub := contract()
	sub.Budget = &stewardv1.Budget{MaxTokens: 10_000}
	ended, err := agent.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: live, Contract: sub, DelegateRef: "agent:summariser", RequestId: "archive-live-child"}))
	if err != nil {
		t.Fatal(err)
	}
	liveChild := ended.Msg.Task.Contract.TaskId // ended, under a live parent
	waitStatus(t, agent.clients, liveChild, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	cancelTask(t, agent, liveChild)
	globex := withToken(p.url, globexAgentToken)
	globexID := createTask(t, globex.clients, "archive-globex").Contract.TaskId
	cancelTask(t, globex, globexID)

	archiveRun := func(token, retention string) string {
		return run(t, 0, "archive", "run", "--store", store, "--retention", retention, "--addr", p.url, "--token", token,
			"--nats", "nats://"+natsAddr, "--nats-nkey", embedded.SeedFile(filepath.Join(data, embedded.UsersDir), natsperm.Archiver))
	}
	// Behind the API, as the admin (the harness finds the seeds under dir/data).
	js := (&harness{dir: dir, natsURL: "nats://" + natsAddr}).jetStreamAs(t, embedded.AdminUser)
	if out := archiveRun(adminToken, "1000h"); !strings.Contains(out, "archived 0 trees") || onLog(t, js, parentID) == 0 {
		t.Fatalf("a run before the retention passed:\n%s", out)
	}
	before := stored(t, js, parentID)
	if before[action.RequestBucket] == 0 || before[action.ResultBucket] == 0 || before[policystore.Bucket] == 0 {
		t.Fatalf("before the run the buckets hold %v of the parent; want its request, result and policy input", before)
	}
	out := archiveRun(adminToken, "1ms,globex=1000h")
	if !strings.Contains(out, "archived 1 trees (2 tasks") || !strings.Contains(out, "kept "+liveChild+": task "+live+" of the tree is TASK_STATUS_RUNNING") {
		t.Fatalf("archive run:\n%s", out)
	}
	for id, want := range map[string]bool{parentID: false, childID: false, live: true, liveChild: true, globexID: true} {
		if held := onLog(t, js, id) > 0; held != want {
			t.Errorf("after the run the log holds task %s: %v, want %v", id, held, want)
		}
	}
	for _, id := range []string{parentID, childID} {
		if got := stored(t, js, id); len(got) != 0 {
			t.Errorf("after the run the buckets hold %v of archived task %s", got, id)
		}
	}
	if got := stored(t, js, live); got[action.RequestBucket] == 0 || got[action.ResultBucket] == 0 || got[policystore.Bucket] == 0 {
		t.Errorf("after the run the buckets hold %v of the live task, which stored what the parent did", got)
	}

	got, err := agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: parentID}))
	if err != nil || got.Msg.Task.Status != stewardv1.TaskStatus_TASK_STATUS_CANCELLED || len(got.Msg.Task.Actions) != 1 {
		t.Fatalf("GetTask from the archive: %v, %v", got, err)
	}
	receipt, err := agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: childID}))
	if err != nil || receipt.Msg.Receipt.TaskId != childID {
		t.Fatalf("GetReceipt from the archive: %v", err)
	}
	if _, err := globex.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: parentID})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("another tenant's GetTask of an archived task: %v, want not found", err)
	}
	if out := run(t, 0, "audit", "verify", "--task", parentID, "--addr", p.url, "--token", adminToken); !strings.Contains(out, "ok") {
		t.Errorf("audit verify --task from the archive:\n%s", out)
	}
	file := filepath.Join(dir, "tree.bundle")
	run(t, 0, "archive", "get", "--store", store, "--task", childID, "--out", file)
	if out := run(t, 0, "audit", "verify", "--bundle", file); !strings.Contains(out, "ok: 2 tasks") || !strings.Contains(out, "2 receipts recomputed") {
		t.Errorf("the archived bundle, verified offline:\n%s", out)
	}

	// A second run finds the archived tree gone from the log (the state
	// plane's views may still list it) and archives nothing more.
	if out := archiveRun(adminToken, "1ms,globex=1000h"); !strings.Contains(out, "archived 0 trees") {
		t.Errorf("a second run after the tree was archived:\n%s", out)
	}

	// Globex's own age, then.
	if out := archiveRun(globexAdminToken, "1ms,globex=1000h"); !strings.Contains(out, "archived 0 trees") {
		t.Errorf("globex's task was archived before its tenant's age:\n%s", out)
	}
	if out := archiveRun(globexAdminToken, "1000h,globex=1ms"); !strings.Contains(out, "archived 1 trees (1 tasks") || onLog(t, js, globexID) != 0 {
		t.Errorf("globex's task past its tenant's age:\n%s", out)
	}

	if out := run(t, 0, "archive", "erase", "--store", store, "--tenant", "", "--reason", "the tenant left"); !strings.Contains(out, "from 1 archived trees") {
		t.Errorf("erase:\n%s", out)
	}
	run(t, 0, "archive", "get", "--store", store, "--task", parentID, "--out", file)
	b := readBundle(t, file)
	if len(b.Requests)+len(b.Results) != 0 || len(b.Erased) < 2 {
		t.Errorf("after erasure the bundle holds %d requests and %d results, %d erased", len(b.Requests), len(b.Results), len(b.Erased))
	}
	if out := run(t, 0, "audit", "verify", "--bundle", file); !strings.Contains(out, "ok: 2 tasks") || !strings.Contains(out, "erased: the tenant left") {
		t.Errorf("the erased bundle:\n%s", out)
	}
	if _, err := agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: parentID})); err != nil {
		t.Errorf("GetTask after erasure: %v", err)
	}
}

// endedTree makes a task that called search with a request and a result
// past 1 KiB, delegates a sub-task, and cancels both.
func endedTree(t *testing.T, agent authed) (parentID, childID string) {
	t.Helper()
	parentID = createTask(t, agent.clients, "archive-parent").Contract.TaskId
	waitStatus(t, agent.clients, parentID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	big := propose(t, agent, parentID, "big", "search", map[string]any{"q": strings.Repeat("incident ", 200)})
	if _, a := waitAction(t, agent.clients, parentID, big.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED); a.RequestRef == "" {
		t.Fatal("the request should be stored by reference")
	}
	sub := contract()
	sub.Budget = &stewardv1.Budget{MaxTokens: 10_000}
	delegated, err := agent.tasks.DelegateTask(context.Background(), connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: parentID, Contract: sub, DelegateRef: "agent:summariser", RequestId: "archive-child"}))
	if err != nil {
		t.Fatal(err)
	}
	childID = delegated.Msg.Task.Contract.TaskId
	waitStatus(t, agent.clients, childID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	cancelTask(t, agent, childID)
	cancelTask(t, agent, parentID)
	return parentID, childID
}

func cancelTask(t *testing.T, c authed, taskID string) {
	t.Helper()
	if _, err := c.tasks.CancelTask(context.Background(), connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: taskID, Reason: "done with it", RequestId: "cancel-" + taskID})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_CANCELLED)
}

// stored is how many keys of taskID each content bucket holds (none
// listed when it holds none).
func stored(t *testing.T, js jetstream.JetStream, taskID string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for b, keys := range map[string]string{action.RequestBucket: taskID + ".>", action.ResultBucket: taskID + ".>", policystore.Bucket: policystore.TaskInputs(taskID) + ">"} {
		if n := heldOn(t, js, bucket.StreamName(b), bucket.Subject(b, keys)); n > 0 {
			out[b] = n
		}
	}
	return out
}

// onLog is how many events of taskID the log holds.
func onLog(t *testing.T, js jetstream.JetStream, taskID string) uint64 {
	t.Helper()
	return heldOn(t, js, "STEWARD_EVENTS", "steward.task."+taskID+".>")
}

// heldOn is how many messages stream holds on subject.
func heldOn(t *testing.T, js jetstream.JetStream, stream, subject string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}
