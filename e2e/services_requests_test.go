package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// BenchmarkServicesRequests runs governed actions in services mode, as the
// bench's arm (d) does (each plane its own `steward serve` over TCP, a
// noop tool under an allow policy, ProposeAction then GetAction with
// wait, 25 actions a task), from one client and from 16 at once, and
// reports per action the NATS messages a subscription to every subject
// sees: all of them, the direct gets (of a last message, of the next, of
// a batch, of one sequence), the leader's gets, and the rest of the
// JetStream API. Those are counts, and hold on a loaded machine, as do
// -benchmem's allocations (every plane's, the server's and the
// clients'); cpu-µs/op, the process's CPU time, does not. Run:
//
//	go test -run '^$' -bench ServicesRequests -benchtime 300x -benchmem ./e2e/
func BenchmarkServicesRequests(b *testing.B) {
	dir := b.TempDir()
	policyDir := filepath.Join(dir, "policy")
	if err := os.MkdirAll(policyDir, 0o750); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(policyDir, "allow.rego"), []byte("package steward.policy\n\ndecision := {\"decision\": \"allow\", \"reasons\": [\"benchmark: allow all\"]}\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, []byte(`{"tools": [{"name": "noop", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "builtin": {"kind": "noop"}}]}`), 0o600); err != nil {
		b.Fatal(err)
	}
	bus := stewardtest.StartBus(b)
	flags := []string{"--tools", toolsFile, "--policy-dir", policyDir}
	urls := startServicesOn(b, bus, map[string][]string{"control": flags, "governance": flags, "execution": flags, "state": flags})
	control, state := newClients(urls["control"]), newClients(urls["state"])
	params, _ := structpb.NewStruct(map[string]any{})
	one := func(taskID, proposal string) error {
		ctx := context.Background()
		resp, err := control.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: proposal, Tool: "noop", Params: params}))
		if err != nil {
			return err
		}
		got, err := state.query.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: taskID, ActionId: resp.Msg.Action.ActionId, Wait: true}))
		if err != nil {
			return err
		}
		if got.Msg.Action.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
			return fmt.Errorf("action %s is %v", got.Msg.Action.ActionId, got.Msg.Action.Status)
		}
		return nil
	}
	newTask := func(id string) (string, error) {
		k := contract()
		k.AllowedTools = []string{"noop"}
		resp, err := control.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: id, Contract: k}))
		if err != nil {
			return "", err
		}
		return resp.Msg.Task.Contract.TaskId, nil
	}
	// A warm-up task, so that what starting costs is not counted.
	warm, err := newTask("warm")
	if err != nil {
		b.Fatal(err)
	}
	waitServed(b, state, warm, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING, tk.Status.String()
	})
	if err := one(warm, "w"); err != nil {
		b.Fatal(err)
	}
	const actionsPerTask = 25
	runs := 0 // -count runs a sub-benchmark again: new tasks each time
	for _, workers := range []int{1, 16} {
		b.Run(fmt.Sprint(workers, "-tasks"), func(b *testing.B) {
			runs++
			counts := countMessages(b, bus)
			cpu0 := processCPU()
			var n atomic.Int64
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var taskID string
					var err error
					for k := 0; n.Add(1) <= int64(b.N); k++ {
						if k%actionsPerTask == 0 {
							taskID, err = newTask(fmt.Sprint("requests-", runs, "-", w, "-", k))
						}
						if err == nil {
							err = one(taskID, fmt.Sprint("p", k))
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			for _, c := range counts.take(b) {
				b.ReportMetric(float64(c.n)/float64(b.N), c.name+"/op")
			}
		})
	}
}

// messageCounts counts what a subscription to every subject receives, by
// kind.
type messageCounts struct {
	nc     *nats.Conn
	closed chan struct{}
	mu     sync.Mutex
	n      map[string]int
}

type kindCount struct {
	name string
	n    int
}

// countMessages subscribes a connection of its own to every subject of
// bus's account and counts from now on.
func countMessages(tb testing.TB, bus *stewardtest.Bus) *messageCounts {
	tb.Helper()
	c := &messageCounts{n: map[string]int{}, closed: make(chan struct{})}
	nc, err := bus.Server.Connect(nats.ClosedHandler(func(*nats.Conn) { close(c.closed) }))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	c.nc = nc
	sub, err := nc.Subscribe(">", func(m *nats.Msg) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.n["msgs"]++
		switch {
		case strings.Count(m.Subject, ".") > 4 && strings.HasPrefix(m.Subject, "$JS.API.DIRECT.GET."):
			c.n["direct-last-gets"]++
		case strings.HasPrefix(m.Subject, "$JS.API.DIRECT.GET."):
			c.n[directKind(m.Data)]++
		case strings.HasPrefix(m.Subject, "$JS.API.STREAM.MSG.GET."):
			c.n["leader-gets"]++
		case strings.HasPrefix(m.Subject, "$JS.API."):
			c.n["other-api"]++
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		tb.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	return c
}

// take stops counting, once every message the server has sent the
// counter is counted, and returns the counts: what the planes do in the
// background after the last action (acknowledgements) is counted or not,
// a few messages in a run of many actions.
func (c *messageCounts) take(tb testing.TB) []kindCount {
	tb.Helper()
	if err := c.nc.Drain(); err != nil {
		tb.Fatal(err)
	}
	<-c.closed
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []kindCount
	for _, k := range []string{"msgs", "direct-last-gets", "direct-next-gets", "direct-batch-gets", "direct-seq-gets", "leader-gets", "other-api"} {
		out = append(out, kindCount{k, c.n[k]})
	}
	return out
}

// directKind names a direct get by its request: a batch, the next
// message on a subject, or the message at a sequence.
func directKind(req []byte) string {
	switch {
	case bytes.Contains(req, []byte(`"batch"`)):
		return "direct-batch-gets"
	case bytes.Contains(req, []byte(`"next_by_subj"`)):
		return "direct-next-gets"
	}
	return "direct-seq-gets"
}

// processCPU is the CPU time this process has used, user and system: the
// planes', NATS's and the clients'.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
