package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/embedded"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestBackupRestoreDrill is the drill of docs/backup.md with the real
// binary: tasks run and one call is at the tool when `steward backup` is
// taken, while more tasks are created and acted on; the Steward is then
// lost (SIGKILL), the backup restored into a fresh data directory with the
// keys put back, and a fresh binary started on it. Every task of the
// backup verifies; every running one takes a new action and runs it; the
// call in flight at the cut is recorded unknown and settled by the tool's
// status query, and the tool never got it a second time. A call the old
// Steward made after the cut (held back by the tool's cap at the cut) is
// recorded unknown by the restore's rule and settled the same way, never
// sent again; an action proposed after the restore is sent once.
func TestBackupRestoreDrill(t *testing.T) {
	tool := stewardtest.StartTool(t).Always("/held", stewardtest.Answer{Work: true, Hold: stewardtest.HoldUntilRelease})
	dir := t.TempDir()
	tools := writeFile(t, dir, "tools.json", drillToolsFile(tool.URL))
	oldData, natsAddr := filepath.Join(dir, "old"), stewardtest.FreeAddr(t)
	// The state plane writes a snapshot of its views every 20 events: the
	// backup holds one, and the restored plane starts from it.
	old := startBinary(t, oldData, "--tools", tools, "--nats-listen", natsAddr, "--snapshot-every", "20")
	c := newClients(old.url)

	var running []string
	for i := range 5 {
		id := drillTask(t, c, fmt.Sprintf("drill-%d", i))
		a := propose(t, authed{clients: c}, id, "first", "put", map[string]any{"item": "a"})
		waitAction(t, c, id, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		running = append(running, id)
	}
	heldTask := drillTask(t, c, "drill-held")
	held := propose(t, authed{clients: c}, heldTask, "held", "holdput", map[string]any{"item": "h"})
	waitAction(t, c, heldTask, held.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED)
	// holdput takes one call at once: the next one waits, permitted, for
	// the held call's slot, and the old Steward sends it after the cut.
	queued := propose(t, authed{clients: c}, heldTask, "queued", "holdput", map[string]any{"item": "q"})
	waitAction(t, c, heldTask, queued.ActionId, stewardv1.ActionStatus_ACTION_STATUS_WAITING)

	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		return scrape(t, old.url)["steward_views_snapshot_bytes"] > 0, "the state plane wrote no snapshot of its views"
	})
	// The backup is taken under load: tasks created and acted on the while.
	load := startDrillLoad(t, c)
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		return load.made.Load() >= 3, "the load made no task"
	})
	backupDir := filepath.Join(dir, "backup")
	seed := embedded.SeedFile(filepath.Join(oldData, embedded.UsersDir), embedded.AdminUser)
	began := time.Now()
	out, _ := runBinary(t, nil, 0, "backup", "--nats", "nats://"+natsAddr, "--nats-nkey", seed, "--out", backupDir)
	took := time.Since(began)
	made := load.stop()
	t.Logf("backup under load in %s (%d tasks made by the load):\n%s", took.Round(time.Millisecond), made, out)
	// A restore into a server that holds Steward's streams restores nothing.
	if _, errOut := runBinary(t, nil, 1, "restore", "--from", backupDir, "--nats", "nats://"+natsAddr, "--nats-nkey", seed); !strings.Contains(errOut, "exists already") {
		t.Errorf("restore over a running Steward: %s", errOut)
	}
	if !strings.Contains(out, "STEWARD_EVENTS") || !strings.Contains(out, "KV_STEWARD_REQUESTS") {
		t.Fatalf("the backup does not name the events and the requests:\n%s", out)
	}
	// After the cut the held call ends and the old Steward sends the
	// queued one: nothing in the backup says so.
	tool.Release()
	waitAction(t, c, heldTask, queued.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	old.kill() // the Steward is lost, and what it did after the cut with it

	newData := filepath.Join(dir, "new")
	copyKeys(t, oldData, newData)
	began = time.Now()
	runBinary(t, nil, 0, "restore", "--from", backupDir, "--data", newData)
	t.Logf("restored in %s", time.Since(began).Round(time.Millisecond))
	// On another machine: another worker name, so the call in flight is
	// taken over once the lost worker's lease has run out.
	freshNATS := stewardtest.FreeAddr(t)
	fresh := startBinary(t, newData, "--tools", tools, "--nats-listen", freshNATS, "--worker", "restored", "--lease", "2s")
	c2 := newClients(fresh.url)

	// The call in flight at the cut: unknown, asked, settled; sent once.
	tk := checkInFlightSettled(t, c2, tool, heldTask, held.ActionId)
	running = append(running, tk.Contract.TaskId)
	// The call made after the cut: unknown by the restore's rule,
	// settled, never sent again.
	checkSentAfterCutSettled(t, c2, tool, heldTask, queued.ActionId)

	if load := scrape(t, fresh.url)["steward_views_snapshot_load_seconds"]; load <= 0 || strings.Contains(fresh.logged(), "snapshot refused") {
		t.Errorf("the restored state plane did not start from the backup's view snapshot (load %gs):\n%s", load, fresh.logged())
	}
	tasks := checkRestoredTasks(t, c2, tool, running)
	checkStoredRefs(t, tasks, "nats://"+freshNATS, embedded.SeedFile(filepath.Join(newData, embedded.UsersDir), embedded.AdminUser))
}

// checkStoredRefs checks the cut: every request and result an event of the
// restored log names by reference is in the restored buckets. They were
// written before the events that name them, and the buckets were taken
// after the events.
func checkStoredRefs(t *testing.T, tasks []*stewardv1.Task, natsURL, seed string) {
	t.Helper()
	ctx := context.Background()
	opt, err := nats.NkeyOptionFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	refs := 0
	for _, tk := range tasks {
		for _, a := range tk.Actions {
			for _, ref := range []string{a.RequestRef, a.GetOutcome().GetResultRef()} {
				if ref == "" {
					continue
				}
				bucket, key, _ := strings.Cut(strings.TrimPrefix(ref, "kv://"), "/")
				kv, err := js.KeyValue(ctx, bucket)
				if err == nil {
					_, err = kv.Get(ctx, key)
				}
				if err != nil {
					t.Errorf("action %s names %s, not in the restored bucket: %v", a.ActionId, ref, err)
				}
				refs++
			}
		}
	}
	if refs == 0 {
		t.Error("no action of the restored tasks names a stored request or result: the drill checks no cut")
	}
	t.Logf("%d stored requests and results named by restored events, all restored", refs)
}

// checkInFlightSettled waits for the action whose call was at the tool at
// the cut to be recorded unknown for its lost worker and settled by the
// status query, having reached the tool once, and returns its task.
func checkInFlightSettled(t *testing.T, c clients, tool *stewardtest.Tool, taskID, actionID string) *stewardv1.Task {
	t.Helper()
	tk, a := waitActionWithin(t, c, taskID, actionID, time.Minute, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if a.SettledBy != statusQuerySettler || tool.Asks(a.OpKey) < 1 {
		t.Errorf("the action in flight was settled by %q after %d status queries; want by the status query", a.SettledBy, tool.Asks(a.OpKey))
	}
	unknown := ""
	for _, rec := range replayTask(t, c, taskID) {
		if o := rec.Event.GetActionOutcomeRecorded(); o.GetActionId() == actionID && o.GetOutcome().GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
			unknown = o.GetOutcome().GetReason()
		}
	}
	if !strings.Contains(unknown, "went silent") {
		t.Errorf("the action in flight at the cut has no unknown outcome for its lost worker on the restored ledger (reason %q)", unknown)
	}
	if n := tool.CallsFor(a.OpKey); n != 1 {
		t.Errorf("the tool got the call in flight at the cut %d times; want once, never re-sent", n)
	}
	return tk
}

// checkSentAfterCutSettled waits for the action the old Steward sent after
// the cut to be recorded unknown for the restore and settled by the
// status query, having reached the tool once.
func checkSentAfterCutSettled(t *testing.T, c clients, tool *stewardtest.Tool, taskID, actionID string) {
	t.Helper()
	_, a := waitActionWithin(t, c, taskID, actionID, time.Minute, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	unknown := ""
	for _, rec := range replayTask(t, c, taskID) {
		if o := rec.Event.GetActionOutcomeRecorded(); o.GetActionId() == actionID && o.GetOutcome().GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
			unknown = o.GetOutcome().GetReason()
		}
	}
	if !strings.Contains(unknown, "restored from a backup") || a.SettledBy != statusQuerySettler {
		t.Errorf("the action sent after the cut: unknown %q, settled by %q; want unknown for the restore, settled by the status query", unknown, a.SettledBy)
	}
	if n := tool.CallsFor(a.OpKey); n != 1 {
		t.Errorf("the tool got the call sent after the cut %d times; want once, never re-sent", n)
	}
}

// checkRestoredTasks checks every task the restored Steward holds: its
// chain verifies, no tool work was done twice for one key, and each
// running one takes a new action and runs it. want must be among them.
func checkRestoredTasks(t *testing.T, c clients, tool *stewardtest.Tool, want []string) []*stewardv1.Task {
	t.Helper()
	ctx := context.Background()
	tasks := listAllTasks(t, c)
	seen := map[string]bool{}
	for _, tk := range tasks {
		id := tk.Contract.TaskId
		seen[id] = true
		v, err := c.audit.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: id}))
		if err != nil || !v.Msg.Ok {
			t.Errorf("task %s does not verify after the restore: %v %v", id, v, err)
		}
		for _, a := range tk.Actions {
			if n := tool.Executions(a.OpKey); n > 1 {
				t.Errorf("the tool did the work of action %s %d times", a.ActionId, n)
			}
		}
	}
	for _, id := range want {
		if !seen[id] {
			t.Errorf("task %s, running before the backup, is not in the restored Steward", id)
		}
	}
	continued := 0
	for _, tk := range tasks {
		if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
			continue
		}
		id := tk.Contract.TaskId
		a := propose(t, authed{clients: c}, id, "after-restore", "put", map[string]any{"item": "after"})
		waitActionWithin(t, c, id, a.ActionId, time.Minute, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if n := tool.CallsFor(a.OpKey); n != 1 {
			t.Errorf("action %s, proposed after the restore, reached the tool %d times; want once, at once", a.ActionId, n)
		}
		continued++
	}
	if continued < len(want) {
		t.Errorf("%d running tasks continued after the restore, want at least %d", continued, len(want))
	}
	t.Logf("restored %d tasks, all verify; %d running ones continued", len(tasks), continued)
	return listAllTasks(t, c)
}

// listAllTasks lists every task, page by page.
func listAllTasks(t *testing.T, c clients) []*stewardv1.Task {
	t.Helper()
	var tasks []*stewardv1.Task
	token := ""
	for {
		resp, err := c.query.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{PageSize: 100, PageToken: token}))
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, resp.Msg.Tasks...)
		if token = resp.Msg.NextPageToken; token == "" {
			return tasks
		}
	}
}

// drillTask creates a running task that may call the drill's tools.
func drillTask(t *testing.T, c clients, requestID string) string {
	t.Helper()
	k := contract()
	k.AllowedTools = []string{"put", "holdput"}
	resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStarted(t, c, id)
	return id
}

// waitActionWithin is waitAction with a bound of its own.
func waitActionWithin(t *testing.T, c clients, taskID, actionID string, within time.Duration, want stewardv1.ActionStatus) (*stewardv1.Task, *stewardv1.Action) {
	t.Helper()
	var a *stewardv1.Action
	tk := waitServed(t, c, taskID, within, func(tk *stewardv1.Task) (bool, string) {
		a = nil
		for _, x := range tk.Actions {
			if x.ActionId == actionID {
				a = x
			}
		}
		return a != nil && a.Status == want, fmt.Sprintf("action %s did not reach %v:\n%s", actionID, want, describeActions(tk))
	})
	return tk, a
}

// drillLoad creates tasks and proposes a call in each until stopped.
type drillLoad struct {
	made   atomic.Int64
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startDrillLoad(t *testing.T, c clients) *drillLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &drillLoad{cancel: cancel}
	// Over 1 KiB: the request and the tool's echo of it are stored in
	// buckets, by reference from the events.
	params, _ := structpb.NewStruct(map[string]any{"item": strings.Repeat("load ", 300)})
	for w := range 2 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				k := contract()
				k.AllowedTools = []string{"put"}
				resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: fmt.Sprintf("load-%d-%d", w, i), Contract: k}))
				if err != nil {
					continue
				}
				l.made.Add(1)
				// A proposal before the task runs is refused: asked again
				// until it is taken.
				for ctx.Err() == nil {
					_, err := c.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
						TaskId: resp.Msg.Task.Contract.TaskId, ProposalId: "load", Tool: "put", Target: "acct:42", Params: params, Rationale: argued}))
					if connect.CodeOf(err) != connect.CodeFailedPrecondition {
						break
					}
				}
			}
		}()
	}
	return l
}

// stop ends the load and returns how many tasks it made.
func (l *drillLoad) stop() int64 {
	l.cancel()
	l.wg.Wait()
	return l.made.Load()
}

// copyKeys puts the keys of the Steward in from into the data directory
// to, as an operator puts them back from where secrets are kept: they
// are not in a backup.
func copyKeys(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"credential.key", "secret.key"} {
		b, err := os.ReadFile(filepath.Join(from, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// drillToolsFile is the drill's tools: put answers at once; holdput is
// held at the tool, its work done, until the test releases it, and takes
// one call at once. Both honour their key and have a status query.
func drillToolsFile(url string) string {
	const item = `{\"type\":\"object\",\"required\":[\"item\"],\"properties\":{\"item\":{\"type\":\"string\",\"minLength\":1}}}`
	entry := func(name, path, timeout, limits string) string {
		return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "parametersSchema": "%s",
		  "idempotency": {"honoursKey": true, "keyScope": "action", "onRepeat": "return_first"},
		  "statusQuery": true, "timeout": %q, "http": {"url": %q, "statusUrl": %q}%s}`, name, item, timeout, url+path, url+"/status", limits)
	}
	return `{"tools": [` + entry("put", "/work", "5s", "") + ",\n" + entry("holdput", "/held", "120s", `, "limits": {"maxConcurrent": 1}`) + `]}`
}
