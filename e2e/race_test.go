package e2e_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// TestPermitIsClaimedOnce gives every permit to several execution workers
// at once — each with its own durable consumer, so each receives every
// permit — and checks that the tool sees exactly one execution per action.
func TestPermitIsClaimedOnce(t *testing.T) {
	const workers, actions = 5, 20
	log, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	tool := startToolServer(t)

	tools := toolreg.New(logger)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go tools.Run(rctx, log)
	requests, err := action.OpenStore(ctx, bus.JS, action.RequestBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	results, err := action.OpenStore(ctx, bus.JS, action.ResultBucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := execution.OpenClaims(ctx, bus.JS, 1)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ctl := control.New(log, logger, control.WithActions(tools, requests))
	gov := governance.New(log, logger, engine, tools, requests)
	start := func(p interface{ Start(context.Context) error }) {
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start(ctl)
	start(gov)
	defer ctl.Stop()
	defer gov.Stop()
	var execs []*execution.Plane
	for i := range workers {
		p := execution.New(log, logger, execution.Config{
			Tools: tools, Requests: requests, Results: results, Claims: claims,
			Worker: fmt.Sprint("w", i), Consumer: fmt.Sprint("execution-w", i),
			Adapters: adapter.Set{HTTP: adapter.NewHTTP(&http.Client{})},
		})
		start(p)
		defer p.Stop()
		execs = append(execs, p)
	}
	if _, _, err := execs[0].Register(ctx, "test", &stewardv1.ToolContract{
		Name: "search", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: tool.URL}},
	}); err != nil {
		t.Fatal(err)
	}

	req := &stewardv1.CreateTaskRequest{RequestId: "race", Contract: contract()}
	tk, _, err := ctl.CreateTask(ctx, "t", req)
	if err != nil {
		t.Fatal(err)
	}
	taskID := tk.Contract.TaskId
	waitTask(t, log, taskID, func(t *stewardv1.Task) bool { return t.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING })
	var wg sync.WaitGroup
	for i := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			params, _ := structpb.NewStruct(map[string]any{"q": fmt.Sprint("query ", i)})
			if _, _, err := ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: fmt.Sprint("p", i), Tool: "search", Params: params}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	final := waitTask(t, log, taskID, func(t *stewardv1.Task) bool {
		n := 0
		for _, a := range t.Actions {
			if a.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
				n++
			}
		}
		return n == actions
	})
	keys, calls := tool.executions()
	if keys != actions || calls != actions {
		t.Fatalf("%d workers, %d actions: the tool did %d executions over %d calls; want %d and %d", workers, actions, keys, calls, actions, actions)
	}
	claimedBy := map[string]int{}
	for _, a := range final.Actions {
		claimedBy[a.ClaimedBy]++
	}
	t.Logf("claims per worker: %v", claimedBy)
}

// waitTask reads and folds the task from the log until ok holds.
func waitTask(t *testing.T, log *eventlog.Log, taskID string, ok func(*stewardv1.Task) bool) *stewardv1.Task {
	t.Helper()
	for range 1500 {
		tk, _, err := task.Load(context.Background(), log, taskID)
		if err == nil && ok(tk) {
			return tk
		}
		sleepBriefly()
	}
	tk, _, _ := task.Load(context.Background(), log, taskID)
	statuses := map[string]int{}
	for _, a := range tk.GetActions() {
		statuses[a.Status.String()]++
	}
	t.Fatalf("task %s never got there: it is %v with actions %v", taskID, tk.GetStatus(), statuses)
	return nil
}
