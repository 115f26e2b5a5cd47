package execution_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/timer"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/execution/breaker"
)

// scriptedTool is a real HTTP tool whose answers follow a script, call by
// call, and which remembers the work it did per Idempotency-Key so that its
// status query tells the truth.
type scriptedTool struct {
	*httptest.Server
	mu     sync.Mutex
	script []string // one answer per call: "ok", "503", "400", "slow" (work, then answer late), "drop" (no work, no answer), "hold-503" (503 once released)
	// release ends the "hold-" answers.
	release chan struct{}
	calls   int
	work    map[string]int // key → times the work was done
	keys    []string       // keys in the order their work was done
}

func startScriptedTool(t *testing.T, script ...string) *scriptedTool {
	ts := &scriptedTool{script: script, work: map[string]int{}, release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /call", ts.call)
	mux.HandleFunc("GET /status", ts.status)
	ts.Server = httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func (ts *scriptedTool) call(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get(adapter.HeaderIdempotencyKey)
	ts.mu.Lock()
	answer := "ok"
	if ts.calls < len(ts.script) {
		answer = ts.script[ts.calls]
	}
	ts.calls++
	doWork := func() {
		if ts.work[key] == 0 {
			ts.keys = append(ts.keys, key)
		}
		ts.work[key]++
	}
	switch answer {
	case "ok", "slow", "work-500":
		doWork()
	}
	ts.mu.Unlock()
	switch answer {
	case "ok":
		writeJSON(w, http.StatusOK, map[string]any{"done": key})
	case "slow":
		time.Sleep(1500 * time.Millisecond) // past the caller's timeout
		writeJSON(w, http.StatusOK, map[string]any{"done": key})
	case "drop":
		time.Sleep(1500 * time.Millisecond)
	case "hold-503": // answers once the test has changed the world
		select {
		case <-ts.release:
		case <-r.Context().Done():
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"message": "scripted 503 after a hold"})
	case "work-500": // does the work, then fails to say so
		writeJSON(w, http.StatusInternalServerError, map[string]any{"message": "scripted 500 after the work"})
	default:
		code, _ := strconv.Atoi(answer)
		writeJSON(w, code, map[string]any{"message": "scripted " + answer})
	}
}

func (ts *scriptedTool) status(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("op_key")
	ts.mu.Lock()
	done := ts.work[key] > 0
	ts.mu.Unlock()
	if done {
		writeJSON(w, http.StatusOK, map[string]any{"state": "succeeded", "result": map[string]any{"done": key}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"state": "not_accepted"})
}

func (ts *scriptedTool) executions(key string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.work[key]
}

func (ts *scriptedTool) callCount() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.calls
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// bed is an execution plane on a real bus, fed permits written straight
// onto the log (standing in for the control and governance planes).
type bed struct {
	t        *testing.T
	log      *eventlog.Log
	bus      *stewardtest.Bus
	cfg      execution.Config
	plane    *execution.Plane
	requests *action.Store
	// logger, when set, is the plane's logger from the next start on.
	logger *slog.Logger
	// revalidated counts the permits the stand-in governance re-issued.
	revalidated atomic.Int32
	// beforeClaim, when set, runs before each claim from the next start on.
	beforeClaim func()
}

func newBed(t *testing.T, br breaker.Config) *bed {
	t.Helper()
	b := openBed(t, br)
	b.standInGovernance()
	b.start()
	return b
}

// openBed is newBed without a plane started, nor anything standing in for
// governance.
func openBed(t *testing.T, br breaker.Config) *bed {
	t.Helper()
	ctx := context.Background()
	log, bus := stewardtest.OpenLog(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	requests, err := action.OpenStore(ctx, bus.JS, action.RequestBucket, 1)
	must(err)
	results, err := action.OpenStore(ctx, bus.JS, action.ResultBucket, 1)
	must(err)
	timers, err := timer.Open(ctx, bus.JS, timer.Config{})
	must(err)
	tools := toolreg.New(slog.New(slog.DiscardHandler))
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); tools.Run(rctx, log) }()
	t.Cleanup(func() { cancel(); <-done })
	b := &bed{t: t, log: log, bus: bus, requests: requests, cfg: execution.Config{
		Tools: tools, Requests: requests, Results: results, Timers: timers, Worker: "w1",
		Adapters: adapter.Set{HTTP: adapter.NewHTTP(nil)}, Breaker: br, Lease: 600 * time.Millisecond,
	}}
	return b
}

// standInGovernance answers every revalidation as a governance plane whose
// policy still allows the action would: a new snapshot and a new permit.
// Tests of what governance decides on revalidation run the real plane
// (revalidate_test.go).
func (b *bed) standInGovernance() {
	sub, err := b.log.React(context.Background(), "test-governance", eventlog.OnRecord[*stewardv1.ActionRevalidating](func(ctx context.Context, rec *stewardv1.EventRecord) error {
		r := rec.Event.GetActionRevalidating()
		t, _, err := taskstore.Load(ctx, b.log, rec.Event.TaskId)
		if err != nil {
			return err
		}
		a := task.FindAction(t, r.ActionId)
		if a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING || a.Permit.GetPermitId() != r.PermitId {
			return nil
		}
		b.revalidated.Add(1)
		snap := &stewardv1.PolicySnapshot{SnapshotId: "s-" + r.PermitId, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}
		pm := &stewardv1.ActionPermit{
			PermitId: r.PermitId + "-r", ActionId: a.ActionId, ActionHash: a.ActionHash, RequestHash: a.RequestHash, SnapshotId: snap.SnapshotId, IssuedAt: timestamppb.Now(),
		}
		for _, p := range []event.Payload{&stewardv1.PolicyEvaluated{ActionId: a.ActionId, Snapshot: snap}, &stewardv1.ActionPermitted{Permit: pm}} {
			ev, err := event.New(event.Meta{ID: event.ID(rec.Event.EventId, fmt.Sprintf("%T", p)), TaskID: rec.Event.TaskId, Actor: &stewardv1.Actor{Principal: "test", Plane: "governance"}}, p)
			if err != nil {
				return err
			}
			if _, err := taskstore.Update(ctx, b.log, rec.Event.TaskId, func(*stewardv1.Task) (*stewardv1.Event, error) { return ev, nil }); err != nil && !errs.Is(err, errs.FailedPrecondition) {
				return err
			}
		}
		return nil
	}))
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(sub.Stop)
}

// start runs a fresh plane, as a restarted process would.
func (b *bed) start() {
	b.t.Helper()
	logger := b.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(testWriter{b.t}, nil))
	}
	p, err := execution.New(b.log, logger, b.cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	if b.beforeClaim != nil {
		execution.SetBeforeClaim(p, b.beforeClaim)
	}
	if err := p.Start(context.Background()); err != nil {
		b.t.Fatal(err)
	}
	b.plane = p
	b.t.Cleanup(p.Stop)
}

// register records a tool served by ts.
func (b *bed) register(ts *scriptedTool, name string, statusQuery bool, edit func(*stewardv1.ToolContract)) {
	b.t.Helper()
	c := &stewardv1.ToolContract{
		Name: name, Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		Timeout:     durationpb.New(time.Second),
		RetryPolicy: &stewardv1.RetryPolicy{MaxAttempts: 3, InitialBackoff: durationpb.New(50 * time.Millisecond), MaxBackoff: durationpb.New(100 * time.Millisecond)},
		// An idempotent write that honours its key: what may be retried
		// after it answered 5xx. Tests of the tools that may not edit it.
		Idempotency: &stewardv1.IdempotencySupport{HonoursKey: true},
		Endpoint:    &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: ts.URL + "/call"}},
	}
	if statusQuery {
		c.StatusQuery = true
		c.GetHttp().StatusUrl = ts.URL + "/status"
	}
	if edit != nil {
		edit(c)
	}
	if _, _, err := b.plane.Register(context.Background(), "test", c); err != nil {
		b.t.Fatal(err)
	}
}

// permit opens a running task with one permitted action for tool, and
// returns the task and action ids.
func (b *bed) permit(taskID, tool, target string) (string, string) {
	b.t.Helper()
	return b.permitAfter(taskID, tool, target)
}

// permitAfter is permit with events recorded just before the permit.
func (b *bed) permitAfter(taskID, tool, target string, before ...event.Payload) (string, string) {
	b.t.Helper()
	return b.permitAfterContract(&stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{tool}}, tool, target, before...)
}

// permitAfterContract is permitAfter for a task with contract k.
func (b *bed) permitAfterContract(k *stewardv1.TaskContract, tool, target string, before ...event.Payload) (string, string) {
	b.t.Helper()
	taskID := k.TaskId
	ctx := context.Background()
	canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: tool, ToolVersion: "1", Target: target, Params: []byte(`{}`)})
	if err != nil {
		b.t.Fatal(err)
	}
	ref, reqHash, err := b.requests.Put(ctx, canonical)
	if err != nil {
		b.t.Fatal(err)
	}
	actionID := action.ID(taskID, "p1")
	a := &stewardv1.Action{
		ActionId: actionID, ProposalId: "p1", Tool: tool, ToolVersion: "1", Target: target,
		EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		RequestRef:  ref, RequestHash: reqHash, ActionHash: action.Hash(actionID, reqHash), OpKey: action.OpKey(taskID, actionID),
	}
	b.append(taskID, &stewardv1.TaskCreated{Contract: k})
	b.append(taskID, &stewardv1.TaskStarted{})
	b.append(taskID, &stewardv1.ActionProposed{Action: a})
	b.append(taskID, &stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
	for _, p := range before {
		b.append(taskID, p)
	}
	b.append(taskID, &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{
		PermitId: "pm-" + actionID, ActionId: actionID, ActionHash: a.ActionHash, RequestHash: reqHash, SnapshotId: "s1", IssuedAt: timestamppb.Now(),
	}})
	return taskID, actionID
}

func (b *bed) append(taskID string, payload event.Payload) {
	b.t.Helper()
	ev, err := event.New(event.Meta{TaskID: taskID, Actor: &stewardv1.Actor{Principal: "test"}}, payload)
	if err != nil {
		b.t.Fatal(err)
	}
	ev.Actor.Plane = event.Owner(ev.Type) // as the plane that owns it
	if _, ok := payload.(*stewardv1.TaskCreated); ok {
		_, err = b.log.Append(context.Background(), eventlog.Head{}, ev)
	} else {
		_, err = taskstore.Update(context.Background(), b.log, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) { return ev, nil })
	}
	if err != nil {
		b.t.Fatal(err)
	}
}

// waitAction waits until the action satisfies ok.
func (b *bed) waitAction(taskID, actionID string, ok func(*stewardv1.Action) bool) *stewardv1.Action {
	b.t.Helper()
	var a *stewardv1.Action
	stewardtest.Eventually(b.t, 30*time.Second, func() (bool, string) {
		t, _, err := taskstore.Load(context.Background(), b.log, taskID)
		if err != nil {
			b.t.Fatal(err)
		}
		a = task.FindAction(t, actionID)
		return ok(a), fmt.Sprintf("action %s is %v (%s)", actionID, a.GetStatus(), a.GetOutcome().GetReason())
	})
	return a
}

func status(s stewardv1.ActionStatus) func(*stewardv1.Action) bool {
	return func(a *stewardv1.Action) bool { return a.GetStatus() == s }
}

// count returns how many of the task's events have type typ.
func (b *bed) count(taskID, typ string) int {
	b.t.Helper()
	recs, err := b.log.Read(context.Background(), taskID)
	if err != nil {
		b.t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Event.Type == typ {
			n++
		}
	}
	return n
}

// testWriter sends the plane's log to the test's, shown when it fails.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
