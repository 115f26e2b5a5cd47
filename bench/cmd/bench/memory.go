package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// The memory run (-memory N) answers what a running task costs each plane
// in memory, which the manifests' requests and limits need and a CPU
// figure cannot give: arm (g)'s layout (each plane and the NATS node a
// process, R1) takes N tasks, each created, running and with one succeeded
// action, and each process's resident set is read at a few points on the
// way. A plane whose memory follows the running tasks shows a slope; one
// that keeps a bounded cache shows a plateau.

// memoryPoints is how many times the resident sets are read after the
// start: at every N/memoryPoints tasks.
const memoryPoints = 4

// runMemory runs the memory measurement for n tasks and writes its table to w.
func runMemory(w io.Writer, n int) error {
	// One principal (the open mode's) holds every task: its quotas must
	// not stop the run before n.
	quota := fmt.Sprint(n + 100)
	d, err := startDeployment("bench-memory-", 1, map[string][]string{"control": {
		"--quota-running-tasks-per-principal", quota, "--quota-running-tasks-per-tenant", quota}})
	if err != nil {
		return err
	}
	defer d.stop()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	c := client{
		tasks: stewardv1connect.NewTaskServiceClient(hc, d.planeURL["control"]),
		query: stewardv1connect.NewQueryServiceClient(hc, d.planeURL["state"]),
	}
	if err := takeTasks(c, 0, 50); err != nil { // warm up: connections, caches, the policy's first evaluations
		return fmt.Errorf("warm-up: %w", err)
	}
	rows := []memoryRow{{tasks: 0, rss: d.resident("VmRSS")}}
	for k := 1; k <= memoryPoints; k++ {
		from, to := n*(k-1)/memoryPoints, n*k/memoryPoints
		start, cpu0 := time.Now(), d.cpus()
		if err := takeTasks(c, 50+from, to-from); err != nil {
			return err
		}
		r := memoryRow{tasks: to, rss: d.resident("VmRSS"), took: time.Since(start), cpu: map[string]float64{}}
		for name, t := range d.cpus() {
			r.cpu[name] = float64((t - cpu0[name]).Microseconds()) / 1000 / float64(to-from)
		}
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "bench: memory: %d tasks, %s\n", to, r.took.Round(time.Second))
	}
	_, err = io.WriteString(w, memoryTable(d.names(), rows, d.resident("VmHWM")))
	return err
}

// memoryRow is the resident set of each process, in MB, with tasks running.
type memoryRow struct {
	tasks int
	rss   map[string]float64
	took  time.Duration      // to create the tasks since the row before
	cpu   map[string]float64 // CPU ms per task created since the row before
}

// memoryTable gives each process's resident set at every row, the slope
// per running task over the second half of the run (where a bounded cache
// has filled), and the peak.
func memoryTable(names []string, rows []memoryRow, peak map[string]float64) string {
	var b strings.Builder
	b.WriteString("| running tasks | tasks/s |")
	for _, name := range names {
		b.WriteString(" " + name + " MB |")
	}
	for _, name := range names {
		b.WriteString(" " + name + " CPU ms/task |")
	}
	b.WriteString("\n| ---: | ---: |" + strings.Repeat(" ---: |", 2*len(names)) + "\n")
	for i, r := range rows {
		fmt.Fprintf(&b, "| %d |", r.tasks)
		if i > 0 {
			fmt.Fprintf(&b, " %.0f |", float64(r.tasks-rows[i-1].tasks)/r.took.Seconds())
		} else {
			b.WriteString(" – |")
		}
		for _, name := range names {
			fmt.Fprintf(&b, " %.0f |", r.rss[name])
		}
		for _, name := range names {
			if i > 0 {
				fmt.Fprintf(&b, " %.2f |", r.cpu[name])
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
	mid, last := rows[len(rows)/2], rows[len(rows)-1]
	fmt.Fprintf(&b, "| KB per task, %d → %d | |", mid.tasks, last.tasks)
	for _, name := range names {
		fmt.Fprintf(&b, " %.1f |", (last.rss[name]-mid.rss[name])*1000/float64(last.tasks-mid.tasks))
	}
	b.WriteString(strings.Repeat(" |", len(names)) + "\n| peak (VmHWM) | |")
	for _, name := range names {
		fmt.Fprintf(&b, " %.0f |", peak[name])
	}
	b.WriteString(strings.Repeat(" |", len(names)) + "\n")
	return b.String()
}

// takeTasks creates n tasks numbered from first, 16 at once, each running
// with one succeeded action of the noop tool.
func takeTasks(c client, first, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, concurrency)
	params, _ := structpb.NewStruct(map[string]any{})
	for range concurrency {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := oneTask(c, fmt.Sprint("memory-", first+int(i)), params); err != nil {
					errs <- err
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// oneTask creates a task, proposes one noop action and waits until it
// succeeded.
func oneTask(c client, requestID string, params *structpb.Struct) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	task, err := newTask(ctx, c, requestID)
	if err != nil {
		return err
	}
	resp, err := c.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: task, ProposalId: "p1", Tool: "noop", Params: params}))
	if err != nil {
		return err
	}
	got, err := c.query.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: task, ActionId: resp.Msg.Action.ActionId, Wait: true}))
	if err != nil {
		return err
	}
	if s := got.Msg.Action.Status; s != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		return fmt.Errorf("task %s: action %s is %v, want succeeded", task, resp.Msg.Action.ActionId, s)
	}
	return nil
}

// names are the deployment's processes in the components' order.
func (d *deployment) names() []string {
	var names []string
	for _, c := range d.all {
		names = append(names, c.name)
	}
	return sortComponents(names)
}

// resident reads a size field of /proc/<pid>/status (VmRSS: the resident
// set now; VmHWM: its peak) of each process, in MB.
func (d *deployment) resident(field string) map[string]float64 {
	m := map[string]float64{}
	for _, c := range d.all {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				m[c.name] = kb / 1000
			}
		}
	}
	return m
}
