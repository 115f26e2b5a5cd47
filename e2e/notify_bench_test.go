package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/state/notify"
)

// BenchmarkNotification measures, in embedded mode over Connect:
//
//   - delivery: from ProposeAction of an action that needs approval until a
//     healthy sink has its approval.requested notification;
//
//   - action: a governed action of the no-op tool (ProposeAction with
//     wait) on a server whose two sinks are one healthy and one failing
//     every POST, beside the same on a server without sinks, alternating
//     in one loop: what a sink failing for the whole run costs an action.
//
//     go test -run '^$' -bench Notification -benchtime 200x ./e2e/
func BenchmarkNotification(b *testing.B) {
	healthy := newArrivals()
	failing := newArrivals()
	failing.answer = http.StatusServiceUnavailable
	dir := b.TempDir()
	sinks := writeFile(b, dir, "sinks.json", fmt.Sprintf(`{"sinks": [
	  {"name": "healthy", "url": %q, "secrets": [%q]},
	  {"name": "failing", "url": %q, "secrets": [%q]}]}`, healthy.url(b), approversSecret, failing.url(b), flakySecret))
	tools := writeFile(b, dir, "tools.json", `{"tools": [
	  {"name": "noop", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "builtin": {"kind": "noop"}},
	  {"name": "pay", "version": "1", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "builtin": {"kind": "noop"}}]}`)
	with := newClients(startInProcess(b, "--tools", tools, "--notify", sinks, "--data", filepath.Join(dir, "with")))
	without := newClients(startInProcess(b, "--tools", tools, "--data", filepath.Join(dir, "without")))
	params, _ := structpb.NewStruct(map[string]any{})
	newTask := func(c clients, id string) string {
		k := contract()
		k.AllowedTools = []string{"noop", "pay"}
		resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: id, Contract: k}))
		if err != nil {
			b.Fatal(err)
		}
		waitServed(b, c, resp.Msg.Task.Contract.TaskId, 30*time.Second, func(tk *stewardv1.Task) (bool, string) {
			return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.Credential != nil, tk.Status.String()
		})
		return resp.Msg.Task.Contract.TaskId
	}

	b.Run("delivery", func(b *testing.B) {
		var delays []time.Duration
		i := 0
		for b.Loop() {
			i++
			taskID := newTask(with, fmt.Sprint("notify-delivery-", b.N, "-", i))
			start := time.Now()
			if _, err := with.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
				TaskId: taskID, ProposalId: "pay", Tool: "pay", Params: params, Rationale: argued})); err != nil {
				b.Fatal(err)
			}
			delays = append(delays, healthy.wait(b, taskID).Sub(start))
		}
		report(b, delays, "delivery")
	})

	b.Run("action", func(b *testing.B) {
		var withSinks, withoutSinks []time.Duration
		var tWith, tWithout string
		i := 0
		one := func(c clients, taskID string) time.Duration {
			start := time.Now()
			resp, err := c.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
				TaskId: taskID, ProposalId: fmt.Sprint("p", i), Tool: "noop", Params: params, Wait: true}))
			if err != nil {
				b.Fatal(err)
			}
			if resp.Msg.Action.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
				b.Fatalf("noop answered %v", resp.Msg.Action.Status)
			}
			return time.Since(start)
		}
		for b.Loop() {
			if i%25 == 0 {
				tWith, tWithout = newTask(with, fmt.Sprint("notify-action-", b.N, "-", i)), newTask(without, fmt.Sprint("plain-action-", b.N, "-", i))
			}
			i++
			withSinks = append(withSinks, one(with, tWith))
			withoutSinks = append(withoutSinks, one(without, tWithout))
		}
		report(b, withSinks, "failing-sink")
		report(b, withoutSinks, "no-sinks")
	})
}

// report reports the p50 and p99 of ds, in ms, under name.
func report(b *testing.B, ds []time.Duration, name string) {
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, name+"-p99-ms")
}

// arrivals is a sink that notes when each task's first notification
// came, answering every POST with answer.
type arrivals struct {
	answer int
	mu     sync.Mutex
	at     map[string]time.Time
	came   map[string]chan struct{}
}

func newArrivals() *arrivals {
	return &arrivals{answer: http.StatusNoContent, at: map[string]time.Time{}, came: map[string]chan struct{}{}}
}

// arrived returns the channel closed once taskID's first notification came.
func (a *arrivals) arrived(taskID string) chan struct{} {
	if a.came[taskID] == nil {
		a.came[taskID] = make(chan struct{})
	}
	return a.came[taskID]
}

// url serves the sink until the benchmark ends.
func (a *arrivals) url(tb testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		var n notify.Notification
		if err := json.NewDecoder(r.Body).Decode(&n); err == nil {
			a.mu.Lock()
			if _, ok := a.at[n.TaskID]; !ok {
				a.at[n.TaskID] = now
				close(a.arrived(n.TaskID))
			}
			a.mu.Unlock()
		}
		w.WriteHeader(a.answer)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// wait returns when taskID's first notification came.
func (a *arrivals) wait(tb testing.TB, taskID string) time.Time {
	a.mu.Lock()
	ch := a.arrived(taskID)
	a.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		tb.Fatalf("no notification of task %s in a minute", taskID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at[taskID]
}
