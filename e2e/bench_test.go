package e2e_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// BenchmarkGovernedAction measures a governed action of a no-op built-in
// tool under an auto-allow policy, in embedded mode over Connect: from the
// ProposeAction call until GetAction, waiting for the action to settle,
// answers with its outcome: what a client waiting for one action calls. Each
// measured action crosses all four planes: proposed (control), evaluated
// and permitted in one event (governance), dispatched (the dispatch
// carrying the claim) and succeeded (execution), projected (state). A task
// takes 25 actions, then the next one starts. one-trip makes the same
// action in one call, ProposeAction with wait (the SDKs' default). Run:
//
//	go test -run '^$' -bench GovernedAction -benchtime 400x ./e2e/
func BenchmarkGovernedAction(b *testing.B) {
	dir := b.TempDir()
	policyDir := filepath.Join(dir, "policy")
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	write(filepath.Join(policyDir, "allow.rego"), "package steward.policy\n\ndecision := {\"decision\": \"allow\", \"reasons\": [\"benchmark: allow all\"]}\n")
	toolsFile := filepath.Join(dir, "tools.json")
	write(toolsFile, `{"tools": [{"name": "noop", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "builtin": {"kind": "noop"}}]}`)
	c := newClients(startInProcess(b, "--tools", toolsFile, "--policy-dir", policyDir))
	params, _ := structpb.NewStruct(map[string]any{})

	newTask := func(id string) string {
		k := contract()
		k.AllowedTools = []string{"noop"}
		resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: id, Contract: k}))
		if err != nil {
			b.Fatal(err)
		}
		for {
			got, err := c.query.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: resp.Msg.Task.Contract.TaskId}))
			if err != nil {
				b.Fatal(err)
			}
			if got.Msg.Task.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING {
				return got.Msg.Task.Contract.TaskId
			}
			time.Sleep(time.Millisecond)
		}
	}
	// one runs one action on taskID and returns how long it took until
	// GetAction, waiting for the action to settle, answers that it
	// succeeded: the one call an agent makes to learn an outcome.
	one := func(taskID, proposal string) time.Duration {
		ctx := context.Background()
		start := time.Now()
		resp, err := c.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: proposal, Tool: "noop", Params: params}))
		if err != nil {
			b.Fatal(err)
		}
		id := resp.Msg.Action.ActionId
		got, err := c.query.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: taskID, ActionId: id, Wait: true}))
		if err != nil {
			b.Fatal(err)
		}
		if a := got.Msg.Action; a.ActionId != id || a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
			b.Fatalf("action %s is not visible as succeeded: %v is %v", id, a.ActionId, a.Status)
		}
		return time.Since(start)
	}

	// oneTrip is one as the SDKs make it by default: ProposeAction with
	// wait, which answers with the outcome in the one call.
	oneTrip := func(taskID, proposal string) {
		resp, err := c.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: proposal, Tool: "noop", Params: params, Wait: true}))
		if err != nil {
			b.Fatal(err)
		}
		if a := resp.Msg.Action; a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
			b.Fatalf("action %s proposed with wait answered %v", a.ActionId, a.Status)
		}
	}

	// Tasks get a fresh one every actionsPerTask actions: real tasks take
	// tens of actions. The "300th" run below measures a long task.
	const actionsPerTask = 25
	// Each run of one-trip (-count) has tasks of its own: the same ids
	// again would be repeats, which append nothing.
	oneTripRuns := 0
	b.Run("one-trip", func(b *testing.B) {
		oneTripRuns++
		var taskID string
		i := 0
		for b.Loop() {
			if i%actionsPerTask == 0 {
				taskID = newTask(fmt.Sprint("bench-one-trip-", oneTripRuns, "-", i))
			}
			i++
			oneTrip(taskID, fmt.Sprint("p", i))
		}
	})
	b.Run("latency", func(b *testing.B) {
		var taskID string
		var lat []time.Duration
		i := 0
		for b.Loop() {
			if i%actionsPerTask == 0 {
				taskID = newTask(fmt.Sprint("bench-latency-", b.N, "-", i))
			}
			i++
			lat = append(lat, one(taskID, fmt.Sprint("p", i)))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	})

	// 300th runs 300 actions on one task per iteration and compares the
	// latency of its first 20 actions with that of its last 20 (281–300):
	// the cost of an action must not grow with the task.
	b.Run("300th", func(b *testing.B) {
		const perTask, window = 300, 20
		warm := newTask(fmt.Sprint("bench-depth-warm-", b.N))
		for i := range window {
			one(warm, fmt.Sprint("w", i))
		}
		var first, last []time.Duration
		n := 0
		for b.Loop() {
			n++
			taskID := newTask(fmt.Sprint("bench-depth-", b.N, "-", n))
			for i := range perTask {
				d := one(taskID, fmt.Sprint("p", i))
				switch {
				case i < window:
					first = append(first, d)
				case i >= perTask-window:
					last = append(last, d)
				}
			}
		}
		p50 := func(ds []time.Duration) float64 {
			slices.Sort(ds)
			return float64(ds[len(ds)/2].Microseconds()) / 1000
		}
		f, l := p50(first), p50(last)
		b.ReportMetric(f, "first20-p50-ms")
		b.ReportMetric(l, "last20-p50-ms")
		b.ReportMetric(l/f, "last/first")
	})

	b.Run("16-tasks", func(b *testing.B) {
		const tasks = 16
		ids := make([]string, tasks)
		for i := range ids {
			ids[i] = newTask(fmt.Sprint("bench-tp-", b.N, "-", i))
		}
		start := time.Now()
		var wg sync.WaitGroup
		var next sync.Mutex
		n := 0
		for w := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					next.Lock()
					if n >= b.N {
						next.Unlock()
						return
					}
					n++
					k := n
					next.Unlock()
					if k%actionsPerTask == 0 {
						ids[w] = newTask(fmt.Sprint("bench-tp-", b.N, "-", k))
					}
					one(ids[w], fmt.Sprint("p", k))
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "actions/s")
	})
}

func benchLog() io.Writer {
	if os.Getenv("BENCH_DEBUG") != "" {
		return os.Stderr
	}
	return io.Discard
}

func benchLevel() string {
	if os.Getenv("BENCH_DEBUG") != "" {
		return "debug"
	}
	return "error"
}
