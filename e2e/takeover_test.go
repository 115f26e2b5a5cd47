package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/cmd/steward/app"
	"github.com/steward-run/steward/pkg/crashpoint"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// takeoverBound is how long after a restart under another worker name a
// claimed action may take to complete (issue 11: "within 10 s").
const takeoverBound = 10 * time.Second

// TestTakeoverAfterClaimUnderNewWorkerName: worker w1 records its claim —
// carried by the permit's first dispatch — and dies before it makes the
// call; the binary comes back over the same data as w2, which no claim
// names. The permit is not stranded: once w1's lease has run out, w2
// records the dispatch's outcome unknown, naming w1, the tool's status
// query says it has no record of the key, and w2 claims the new permit and
// dispatches it. Within 10 s of the restart the action succeeds, with one
// call and one execution at the tool.
func TestTakeoverAfterClaimUnderNewWorkerName(t *testing.T) {
	tool := stewardtest.StartTool(t).IgnoreKeys()
	flags := []string{"--tools", writeFile(t, t.TempDir(), "tools.json", putToolsFile(tool, "30s"))}
	data := t.TempDir()

	p := startBinaryEnv(t, data, []string{crashpoint.EnvVar + "=" + crashpoint.AfterClaim}, append(flags, "--worker=w1")...)
	r := &crashRun{c: newClients(p.url)}
	r.taskID = takeoverTask(t, r.c, r.c, "takeover-after-claim")
	r.propose(t, "step", "put")
	waitCrash(t, p, crashpoint.AfterClaim, r.lastErr)

	restart := time.Now()
	p = startBinaryEnv(t, data, []string{crashpoint.EnvVar + "="}, append(flags, "--worker=w2")...)
	r.c = newClients(p.url)
	a := waitProposal(t, r.c, r.taskID, "step", takeoverBound-time.Since(restart), stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	t.Logf("the action succeeded %s after the restart", time.Since(restart).Round(time.Millisecond))

	calls, keys, work := tool.Calls(), callKeys(tool, "/call"), tool.Executions(a.OpKey)
	if calls != 1 || work != 1 {
		t.Errorf("the tool got %d calls (keys %v) and did the work %d times; want one call, worked once", calls, keys, work)
	}
	history, _ := settledHistory(t, r.c, r.taskID)
	if got := claimsOf(history, a.ActionId); !slices.Equal(got, []string{"w1", "w2"}) {
		t.Errorf("claims of the action by %v; want w1's (carried by its dispatch), then w2's of the new permit", got)
	}
	if got := dispatchesOf(history, a.ActionId); !slices.Equal(got, []string{"w1", "w2"}) {
		t.Errorf("dispatches of the action by %v; want w1's (never called), then w2's", got)
	}
	u := unknownOutcome(history, a.ActionId)
	if u.GetEvent().GetActor().GetPrincipal() != "w2" || !strings.Contains(u.GetEvent().GetActionOutcomeRecorded().GetOutcome().GetReason(), "w1") {
		t.Errorf("unknown outcome %v; want it recorded by w2, naming w1", u.GetEvent())
	}
	if a.SettledBy != statusQuerySettler {
		t.Errorf("the action was settled by %q; want the status query (not accepted), before the one call", a.SettledBy)
	}
	verifyChain(t, r.c, r.taskID, len(history))
}

// TestTakeoverOfAClaimOnItsOwnUnderNewWorkerName: the claim that is an
// ActionClaimed on its own, before the dispatch record — as for a retry's
// permit, which is claimed first. The first call answers 503 and the
// action waits to retry; the binary is killed in the wait and comes back
// as w1 with the crash armed, claims the retry's new permit and dies
// before it records the dispatch. Back as w2, which no claim names, the
// permit is not stranded: once w1's lease has run out, w2 dispatches it.
// Within 10 s of the restart the action succeeds: two requests with the
// one op_key (the 503 and the retry), the work done once.
func TestTakeoverOfAClaimOnItsOwnUnderNewWorkerName(t *testing.T) {
	tool := stewardtest.StartTool(t).ScriptPerKey("/flaky", stewardtest.Fail(http.StatusServiceUnavailable))
	// A backoff long enough to kill the binary in the wait.
	flags := []string{"--tools", writeFile(t, t.TempDir(), "tools.json", fmt.Sprintf(`{"tools": [{"name": "waitput", "version": "1",
	  "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "idempotency": {"honoursKey": true},
	  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "2s", "maxBackoff": "2s"}, "http": {"url": %q}}]}`, tool.URL+"/flaky"))}
	data := t.TempDir()

	p := startBinary(t, data, append(flags, "--worker=w1")...)
	r := &crashRun{c: newClients(p.url)}
	k := contract()
	k.AllowedTools = []string{"waitput"}
	r.taskID = createTaskWith(t, r.c, "takeover-claim-alone", k)
	a := r.propose(t, "step", "waitput")
	if a == nil {
		t.Fatal(r.lastErr)
	}
	waitAction(t, r.c, r.taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_WAITING)
	p.kill()

	p = startBinaryEnv(t, data, []string{crashpoint.EnvVar + "=" + crashpoint.AfterClaim}, append(flags, "--worker=w1")...)
	waitCrash(t, p, crashpoint.AfterClaim, nil)

	restart := time.Now()
	p = startBinaryEnv(t, data, []string{crashpoint.EnvVar + "="}, append(flags, "--worker=w2")...)
	r.c = newClients(p.url)
	done := waitProposal(t, r.c, r.taskID, "step", takeoverBound-time.Since(restart), stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	t.Logf("the action succeeded %s after the restart", time.Since(restart).Round(time.Millisecond))

	history, _ := settledHistory(t, r.c, r.taskID)
	var alone []string // workers of the ActionClaimed events: claims on their own
	for _, rec := range history {
		if c := rec.Event.GetActionClaimed(); c.GetActionId() == a.ActionId {
			alone = append(alone, c.Worker)
			for _, later := range history {
				if d := later.Event.GetActionDispatched(); d.GetPermitId() == c.PermitId && d.Worker == c.Worker {
					t.Errorf("%s dispatched the permit %s it claimed; want it dead before the dispatch record", d.Worker, c.PermitId)
				}
			}
		}
	}
	if !slices.Contains(alone, "w1") {
		t.Errorf("claims on their own by %v; want w1's of the retry's permit", alone)
	}
	if got := dispatchesOf(history, a.ActionId); !slices.Equal(got, []string{"w1", "w2"}) {
		t.Errorf("dispatches by %v; want w1's first try, then w2's retry", got)
	}
	if posts, work := tool.CallsFor(done.OpKey), tool.Executions(done.OpKey); posts != 2 || work != 1 {
		t.Errorf("the tool got %d requests for the op_key and did the work %d times; want 2 (the 503, the retry) and once", posts, work)
	}
	verifyChain(t, r.c, r.taskID, len(history))
}

// createTaskWith creates a task with contract k and waits until it runs.
func createTaskWith(t *testing.T, c clients, requestID string, k *stewardv1.TaskContract) string {
	t.Helper()
	resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStatus(t, c, id, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	return id
}

// takeoverLease is the lease the two workers of
// TestTakeoverWhenAWorkerDiesMidCall hold their actions under.
const takeoverLease = 3 * time.Second

// TestTakeoverWhenAWorkerDiesMidCall runs the planes as separate
// processes over one NATS, with two execution workers sharing the permits.
// The tool holds the call open. The worker that dispatched it is killed
// with SIGKILL mid-call; within the lease plus 10 s the other worker
// records the outcome as unknown, naming the silent worker, and never
// calls again: the tool's status query — "in progress" until the work is
// done, then the result — settles the action as succeeded. The tool got
// one request for the op_key.
func TestTakeoverWhenAWorkerDiesMidCall(t *testing.T) {
	// The tool holds the call open until the test finishes the work; till
	// then its status query says the work is in progress.
	tool := stewardtest.StartTool(t).
		Always("/call", stewardtest.Answer{Work: true, Hold: stewardtest.HoldUntilRelease}).
		AnswerStatus(stewardtest.Answer{Body: `{"state": "in_progress"}`})
	bus := stewardtest.StartBus(t)
	urls := map[string]string{}
	for _, plane := range []string{"control", "governance", "state"} {
		urls[plane] = startServePlane(t, bus.Server.ClientURL(), plane)
	}
	tools := writeFile(t, t.TempDir(), "tools.json", heldToolsFile(tool))
	workers := map[string]*proc{}
	for _, name := range []string{"wa", "wb"} {
		workers[name] = startCommand(t, nil, "serve", "--plane=execution", "--nats", bus.Server.ClientURL(), "--addr", "127.0.0.1:0",
			"--log-level", "warn", "--sandbox", t.TempDir(), "--tools", tools, "--worker", name, "--lease", takeoverLease.String(), "--insecure")
	}
	control, state := newClients(urls["control"]), newClients(urls["state"])
	r := &crashRun{c: control}
	r.taskID = takeoverTask(t, control, state, "takeover-mid-call")
	a := r.propose(t, "held", "held")
	if a == nil {
		t.Fatal(r.lastErr)
	}
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		return len(tool.Worked()) > 0, "the call never reached the tool"
	})
	key := tool.Worked()[0].Key

	// The worker that made the call is the one to kill.
	var dispatcher string
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		got := dispatchesOf(replayTask(t, state, r.taskID), a.ActionId)
		if len(got) == 1 {
			dispatcher = got[0]
		}
		return len(got) == 1, fmt.Sprintf("dispatches by %v", got)
	})
	survivor := "wa"
	if dispatcher == "wa" {
		survivor = "wb"
	} else if dispatcher != "wb" {
		t.Fatalf("the call was dispatched by %q, which is neither worker", dispatcher)
	}
	killed := time.Now()
	workers[dispatcher].kill()

	// The other worker calls it unknown, within the lease plus 10 s.
	var unknown *stewardv1.EventRecord
	stewardtest.Eventually(t, takeoverLease+10*time.Second, func() (bool, string) {
		unknown = unknownOutcome(replayTask(t, state, r.taskID), a.ActionId)
		return unknown != nil, fmt.Sprintf("no unknown outcome %s after %s was killed", time.Since(killed).Round(time.Millisecond), dispatcher)
	})
	t.Logf("%s recorded the outcome unknown %s after %s was killed (lease %s): %q", unknown.Event.GetActor().GetPrincipal(),
		unknown.Event.Time.AsTime().Sub(killed).Round(time.Millisecond), dispatcher, takeoverLease, unknown.Event.GetActionOutcomeRecorded().GetOutcome().GetReason())
	if by := unknown.Event.GetActor().GetPrincipal(); by != survivor {
		t.Errorf("the unknown outcome was recorded by %q; want the surviving worker %s", by, survivor)
	}
	if reason := unknown.Event.GetActionOutcomeRecorded().GetOutcome().GetReason(); !strings.Contains(reason, dispatcher) {
		t.Errorf("the outcome is unknown because %q; want the reason to name the silent worker %s", reason, dispatcher)
	}

	// The work finishes at the tool; its status query settles the action.
	tool.AnswerStatus(stewardtest.Answer{Body: fmt.Sprintf(`{"state": "succeeded", "result": {"done": %q}}`, key)})
	tool.Release()
	settled := waitProposal(t, state, r.taskID, "held", 30*time.Second, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	t.Logf("settled by %q %s after the kill", settled.SettledBy, time.Since(killed).Round(time.Millisecond))
	if settled.SettledBy != statusQuerySettler {
		t.Errorf("the action was settled by %q; want %q", settled.SettledBy, statusQuerySettler)
	}
	if settled.OpKey != key {
		t.Errorf("the tool was called with op_key %s; the action's is %s", key, settled.OpKey)
	}
	if n := tool.CallsFor(key); n != 1 {
		t.Errorf("the tool got %d requests for the op_key; want 1 (a lost call is asked about, never repeated)", n)
	}
	if n := tool.Asks(key); n < 1 {
		t.Errorf("the status query was asked %d times; want at least once", n)
	}
	history := replayTask(t, state, r.taskID)
	if got := dispatchesOf(history, a.ActionId); len(got) != 1 {
		t.Errorf("dispatches by %v; want exactly one, by %s", got, dispatcher)
	}
	verifyChain(t, state, r.taskID, len(history))
}

// startServePlane runs one plane as `steward serve` in this process over
// natsURL and returns its URL: the planes this test does not kill.
func startServePlane(t *testing.T, natsURL, plane string) string {
	t.Helper()
	m := app.NewServer(io.Discard, &testWriter{tb: t})
	flags := []string{"--plane", plane, "--nats", natsURL, "--addr", "127.0.0.1:0", "--log-level", "warn", "--insecure"}
	if plane == "governance" {
		flags = append(flags, "--credential-key", filepath.Join(t.TempDir(), "credential.key"))
	}
	if err := m.ParseFlags("serve", flags); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("%s: %v", plane, err)
	}
	t.Cleanup(m.Close)
	return m.URL()
}

// takeoverTask creates a task that may use put and held through control,
// and waits until state serves it running.
func takeoverTask(t *testing.T, control, state clients, requestID string) string {
	t.Helper()
	k := contract()
	k.AllowedTools = []string{"put", "held"}
	resp, err := control.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStatus(t, state, id, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	return id
}

// claimsOf returns the worker of each claim of actionID's permits: an
// ActionClaimed, or a dispatch that carried the claim — straight from the
// permit, naming a permit that no ActionClaimed claimed before it.
func claimsOf(history []*stewardv1.EventRecord, actionID string) []string {
	var by []string
	claimed := map[string]bool{}
	for _, rec := range history {
		if c := rec.Event.GetActionClaimed(); c.GetActionId() == actionID {
			by = append(by, c.Worker)
			claimed[c.PermitId] = true
		}
		if d := rec.Event.GetActionDispatched(); d.GetActionId() == actionID && d.PermitId != "" && !claimed[d.PermitId] {
			by = append(by, d.Worker)
			claimed[d.PermitId] = true
		}
	}
	return by
}

// claimedPermit reports whether ev claims permitID: an ActionClaimed of it,
// or a dispatch under it (which carries the claim when none came before).
func claimedPermit(ev *stewardv1.Event, permitID string) bool {
	return ev.GetActionClaimed().GetPermitId() == permitID || ev.GetActionDispatched().GetPermitId() == permitID
}

// dispatchesOf returns the worker of each ActionDispatched of actionID.
func dispatchesOf(history []*stewardv1.EventRecord, actionID string) []string {
	var by []string
	for _, rec := range history {
		if d := rec.Event.GetActionDispatched(); d.GetActionId() == actionID {
			by = append(by, d.Worker)
		}
	}
	return by
}

// unknownOutcome returns the first unknown outcome of actionID, or nil.
func unknownOutcome(history []*stewardv1.EventRecord, actionID string) *stewardv1.EventRecord {
	for _, rec := range history {
		o := rec.Event.GetActionOutcomeRecorded()
		if o.GetActionId() == actionID && o.GetOutcome().GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
			return rec
		}
	}
	return nil
}

// putToolsFile registers tool's /call as put: an idempotent write with a
// status query.
func putToolsFile(tool *stewardtest.Tool, timeout string) string {
	return fmt.Sprintf(`{"tools": [{"name": "put", "version": "1", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	  "idempotency": {"honoursKey": true}, "statusQuery": true, "timeout": %q, "http": {"url": %q, "statusUrl": %q}}]}`,
		timeout, tool.URL+"/call", tool.URL+"/status")
}

// heldToolsFile registers tool's /call as held: an idempotent write with
// a status query and a timeout well past the test, so that only the kill
// ends the call.
func heldToolsFile(tool *stewardtest.Tool) string {
	return fmt.Sprintf(`{"tools": [{"name": "held", "version": "1", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	  "idempotency": {"honoursKey": true}, "statusQuery": true, "timeout": "120s", "http": {"url": %q, "statusUrl": %q}}]}`,
		tool.URL+"/call", tool.URL+"/status")
}
