package e2e_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/timer"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// planes is every plane of Steward built in-process on one embedded
// JetStream, with several execution workers.
type planes struct {
	log   *eventlog.Log
	bus   *stewardtest.Bus
	tool  *toolServer
	tools *toolreg.Registry
	ctl   *control.Plane
	gov   *governance.Plane
	execs []*execution.Plane
	deps  execution.Config
}

// startPlanes starts control, governance and n execution workers, each
// worker with its own durable consumer so that each receives every
// permit, and registers the "search" (read) and "wire" (irreversible)
// tools on the tool server.
func startPlanes(t *testing.T, n int) *planes {
	log, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ps := &planes{log: log, bus: bus, tool: startToolServer(t), tools: toolreg.New(logger)}
	rctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go ps.tools.Run(rctx, log)
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
	engine, err := policy.Load(ctx, "")
	must(err)
	timers, err := timer.Open(ctx, bus.JS, timer.Config{})
	must(err)
	ps.deps = execution.Config{Tools: ps.tools, Requests: requests, Results: results, Timers: timers,
		Adapters: adapter.Set{HTTP: adapter.NewHTTP(&http.Client{})}}
	ps.ctl = control.New(log, logger, control.WithActions(ps.tools, requests))
	ps.gov = governance.New(log, logger, governance.Config{Engine: engine, Tools: ps.tools, Requests: requests})
	must(ps.ctl.Start(ctx))
	must(ps.gov.Start(ctx))
	t.Cleanup(ps.ctl.Stop)
	t.Cleanup(ps.gov.Stop)
	for i := range n {
		cfg := ps.deps
		cfg.Worker, cfg.Consumer = fmt.Sprint("w", i), fmt.Sprint("execution-w", i)
		p, err := execution.New(log, logger, cfg)
		must(err)
		must(p.Start(ctx))
		t.Cleanup(p.Stop)
		ps.execs = append(ps.execs, p)
	}
	for _, c := range []*stewardv1.ToolContract{
		{Name: "search", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
			Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: ps.tool.URL + "/search"}}},
		{Name: "wire", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
			Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: ps.tool.URL + "/wire"}}},
	} {
		_, _, err := ps.execs[0].Register(ctx, "test", c)
		must(err)
	}
	return ps
}

// runningTask creates a task that allows both tools and waits until it runs.
func (ps *planes) runningTask(t *testing.T, requestID string) string {
	k := contract()
	k.AllowedTools = []string{"search", "wire"}
	tk, _, err := ps.ctl.CreateTask(context.Background(), "t", &stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, ps.log, tk.Contract.TaskId, func(t *stewardv1.Task) bool { return t.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING })
	return tk.Contract.TaskId
}

func (ps *planes) propose(t *testing.T, taskID, proposalID, tool string) *stewardv1.Action {
	params, _ := structpb.NewStruct(map[string]any{"q": proposalID})
	a, _, err := ps.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: proposalID, Tool: tool, Params: params})
	if err != nil {
		t.Error(err)
	}
	return a
}

func countStatus(tk *stewardv1.Task, s stewardv1.ActionStatus) int {
	n := 0
	for _, a := range tk.Actions {
		if a.Status == s {
			n++
		}
	}
	return n
}

// TestPermitIsClaimedOnce gives every permit to several execution workers
// at once and checks that the tool sees exactly one execution per action.
func TestPermitIsClaimedOnce(t *testing.T) {
	const workers, actions = 5, 20
	ps := startPlanes(t, workers)
	taskID := ps.runningTask(t, "race")
	var wg sync.WaitGroup
	for i := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps.propose(t, taskID, fmt.Sprint("p", i), "search")
		}()
	}
	wg.Wait()
	final := waitTask(t, ps.log, taskID, func(t *stewardv1.Task) bool {
		return countStatus(t, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED) == actions
	})
	keys, calls := ps.tool.executions()
	if keys != actions || calls != actions {
		t.Fatalf("%d workers, %d actions: the tool did %d executions over %d calls; want %d and %d", workers, actions, keys, calls, actions, actions)
	}
	claimedBy := map[string]int{}
	for _, a := range final.Actions {
		claimedBy[a.ClaimedBy]++
	}
	t.Logf("claims per worker: %v", claimedBy)
}

// TestRedeliveryAppendsNothingTwice runs governed actions to the end, then
// makes every plane see every event again — each durable consumer is
// deleted and the planes restarted, so JetStream redelivers the whole log
// — and checks that no event was appended and no tool call made.
func TestRedeliveryAppendsNothingTwice(t *testing.T) {
	ps := startPlanes(t, 2)
	ctx := context.Background()
	taskID := ps.runningTask(t, "redeliver")
	ps.propose(t, taskID, "r1", "search")
	ps.propose(t, taskID, "r2", "search")
	w := ps.propose(t, taskID, "w1", "wire")
	tk := waitTask(t, ps.log, taskID, func(t *stewardv1.Task) bool {
		return countStatus(t, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED) == 2 && countStatus(t, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL) == 1
	})
	a := task.FindAction(tk, w.ActionId)
	if _, err := ps.gov.Decide(ctx, rpc.Identity{Principal: "user:bo", Roles: []string{"authorizer"}}, &stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	}); err != nil {
		t.Fatal(err)
	}
	before := waitTask(t, ps.log, taskID, func(t *stewardv1.Task) bool {
		return countStatus(t, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED) == 3
	})
	_, callsBefore := ps.tool.executions()

	// Redeliver everything to every plane.
	ps.ctl.Stop()
	ps.gov.Stop()
	for _, e := range ps.execs {
		e.Stop()
	}
	for _, consumer := range []string{control.PlaneName, governance.PlaneName, "execution-w0", "execution-w1"} {
		if err := ps.bus.JS.DeleteConsumer(ctx, ps.log.Config().Stream, consumer); err != nil {
			t.Fatalf("delete consumer %s: %v", consumer, err)
		}
	}
	for _, p := range []interface{ Start(context.Context) error }{ps.ctl, ps.gov, ps.execs[0], ps.execs[1]} {
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A fresh action after the restart: once it has run, every plane has
	// passed over the whole history again.
	marker := ps.propose(t, taskID, "after", "search")
	after := waitTask(t, ps.log, taskID, func(t *stewardv1.Task) bool {
		return task.FindAction(t, marker.ActionId).GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
	})
	// The marker's own events are the only new ones: proposed, evaluated,
	// permitted, claimed, dispatched, outcome.
	if got, want := after.EventCount, before.EventCount+6; got != want {
		t.Fatalf("after redelivery the task has %d events, want %d", got, want)
	}
	if _, calls := ps.tool.executions(); calls != callsBefore+1 {
		t.Fatalf("after redelivery the tool got %d calls, want %d", calls, callsBefore+1)
	}
}

// waitTask reads and folds the task from the log until ok holds.
func waitTask(t *testing.T, log *eventlog.Log, taskID string, ok func(*stewardv1.Task) bool) *stewardv1.Task {
	t.Helper()
	for range 1500 {
		tk, _, err := taskstore.Load(context.Background(), log, taskID)
		if err == nil && ok(tk) {
			return tk
		}
		sleepBriefly()
	}
	tk, _, _ := taskstore.Load(context.Background(), log, taskID)
	statuses := map[string]int{}
	for _, a := range tk.GetActions() {
		statuses[a.Status.String()]++
	}
	t.Fatalf("task %s never got there: it is %v with actions %v", taskID, tk.GetStatus(), statuses)
	return nil
}

// TestActionThatCannotBeEvaluatedIsDenied removes an action's stored
// request before governance sees it: the action is denied with the reason,
// not left proposed for ever.
func TestActionThatCannotBeEvaluatedIsDenied(t *testing.T) {
	ps := startPlanes(t, 1)
	ctx := context.Background()
	taskID := ps.runningTask(t, "lost-request")
	ps.gov.Stop()
	a := ps.propose(t, taskID, "lost", "search")
	kv, err := ps.bus.JS.KeyValue(ctx, action.RequestBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, a.RequestHash); err != nil {
		t.Fatal(err)
	}
	if err := ps.gov.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tk := waitTask(t, ps.log, taskID, func(t *stewardv1.Task) bool {
		return task.FindAction(t, a.ActionId).GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_DENIED
	})
	if got := task.FindAction(tk, a.ActionId).Outcome.GetReason(); !strings.Contains(got, "cannot be evaluated") {
		t.Fatalf("deny reason: %q", got)
	}
	if _, calls := ps.tool.executions(); calls != 0 {
		t.Fatalf("the tool was called %d times", calls)
	}
}

// TestPermitWaitsForAPausedTask approves an action while its task is
// paused: the permit is issued but nothing runs until the task resumes,
// and then it runs once.
func TestPermitWaitsForAPausedTask(t *testing.T) {
	ps := startPlanes(t, 2)
	ctx := context.Background()
	taskID := ps.runningTask(t, "paused-permit")
	w := ps.propose(t, taskID, "w1", "wire")
	tk := waitTask(t, ps.log, taskID, func(t *stewardv1.Task) bool {
		return task.FindAction(t, w.ActionId).GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL
	})
	if _, err := ps.ctl.Apply(ctx, "user:ana", taskID, &stewardv1.TaskPaused{Reason: "hold on"}); err != nil {
		t.Fatal(err)
	}
	a := task.FindAction(tk, w.ActionId)
	if _, err := ps.gov.Decide(ctx, rpc.Identity{Principal: "user:bo", Roles: []string{"authorizer"}}, &stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	}); err != nil {
		t.Fatal(err)
	}
	paused := waitTask(t, ps.log, taskID, func(t *stewardv1.Task) bool {
		return task.FindAction(t, w.ActionId).GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED
	})
	if paused.Status != stewardv1.TaskStatus_TASK_STATUS_PAUSED || paused.PausedFrom != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("task is %v (resumes to %v), want paused, resuming to running", paused.Status, paused.PausedFrom)
	}
	time.Sleep(200 * time.Millisecond)
	if n := ps.tool.callsFor(w.OpKey); n != 0 {
		t.Fatalf("the tool ran %d times while the task was paused", n)
	}
	if _, err := ps.ctl.Apply(ctx, "user:ana", taskID, &stewardv1.TaskResumed{}); err != nil {
		t.Fatal(err)
	}
	waitTask(t, ps.log, taskID, func(t *stewardv1.Task) bool {
		return task.FindAction(t, w.ActionId).GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
	})
	if n := ps.tool.callsFor(w.OpKey); n != 1 {
		t.Fatalf("after the resume the tool ran %d times, want 1", n)
	}
}
