package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// scrape GETs url's /metrics and returns each sample's value by its series
// as written, e.g. `steward_tasks{status="running"}`.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics = %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sumOf adds up the samples of the series that start with prefix.
func sumOf(samples map[string]float64, prefix string) (sum float64, n int) {
	for series, v := range samples {
		if strings.HasPrefix(series, prefix) {
			sum += v
			n++
		}
	}
	return sum, n
}

// TestMetricsEndpoint runs the binary, creates a task and reads /metrics:
// the task is counted, traces are complete, the reaction consumers catch
// up, and the runtime and process metrics are there.
func TestMetricsEndpoint(t *testing.T) {
	p := startBinary(t, t.TempDir())
	c := newClients(p.url)
	task := createTask(t, c, "metrics")
	waitStatus(t, c, task.Contract.TaskId, stewardv1.TaskStatus_TASK_STATUS_RUNNING)

	var m map[string]float64
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		m = scrape(t, p.url)
		// The reactions have seen every event once nothing is pending.
		pending, consumers := sumOf(m, `steward_consumer_pending{consumer=`)
		return consumers > 0 && pending == 0, fmt.Sprintf("consumers still behind: %d consumers, %v pending", consumers, pending)
	})

	for series, want := range map[string]float64{
		`steward_tasks{status="running"}`:                                      1,
		`steward_tasks{status="accepted"}`:                                     0,
		`steward_tasks_broken`:                                                 0,
		`steward_trace_completeness_ratio`:                                     1,
		`steward_task_success_ratio`:                                           0,
		`steward_policy_block_ratio`:                                           0,
		`steward_permit_latency_seconds_count{approval="none"}`:                0,
		`steward_consumer_pending{consumer="control",stream="STEWARD_EVENTS"}`: 0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present: %v), want %v", series, got, ok, want)
		}
	}
	if total, _ := sumOf(m, "steward_tasks{"); total != 1 {
		t.Errorf("steward_tasks adds up to %v, want 1", total)
	}
	if _, n := sumOf(m, `steward_consumer_ack_pending{consumer=`); n == 0 {
		t.Error("no steward_consumer_ack_pending series")
	}
	if _, n := sumOf(m, `steward_consumer_pending{consumer="governance-timers",stream="STEWARD_TIMERS_GOVERNANCE"}`); n == 0 {
		t.Errorf("no lag reported for the timer stream's consumers: %v", keysWith(m, "steward_consumer_pending"))
	}
	for _, series := range []string{"go_goroutines", "process_resident_memory_bytes", `steward_actions{status="succeeded"}`} {
		if _, ok := m[series]; !ok {
			t.Errorf("%s is missing", series)
		}
	}
}

func keysWith(m map[string]float64, prefix string) []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// TestAcceptanceMetrics runs the binary through a known scenario — one
// task accepted by its checks alone after spending 2000 micro-euros and 50
// tokens, one returned by its acceptance owner — and checks the
// acceptance metrics /metrics reports for it.
func TestAcceptanceMetrics(t *testing.T) {
	p := startBinary(t, t.TempDir())
	c := newClients(p.url)
	ctx := context.Background()

	start := func(requestID, owner string) string {
		t.Helper()
		k := contract()
		k.Budget = &stewardv1.Budget{MaxCostMicros: 1_000_000, Currency: "EUR"}
		k.AcceptanceOwnerRef = owner
		k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "has-notes", Expression: `"notes" in artifacts`}}
		resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
		if err != nil {
			t.Fatal(err)
		}
		id := resp.Msg.Task.Contract.TaskId
		waitStatus(t, c, id, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
		if _, err := c.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{
			TaskId: id, Name: "notes", MediaType: "text/plain", Content: []byte("done"),
		})); err != nil {
			t.Fatal(err)
		}
		return id
	}
	accepted := start("metrics-accepted", "")
	if _, err := c.tasks.ReportUsage(ctx, connect.NewRequest(&stewardv1.ReportUsageRequest{TaskId: accepted, Tokens: 50, CostMicros: 2000, RequestId: "u"})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: accepted})); err != nil {
		t.Fatal(err)
	}
	returned := start("metrics-returned", "user:owner")
	if _, err := c.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: returned})); err != nil {
		t.Fatal(err)
	}
	ret := connect.NewRequest(&stewardv1.ReturnTaskRequest{TaskId: returned, Reasons: []string{"too short"}})
	ret.Header().Set(rpc.PrincipalHeader, "user:owner")
	if _, err := c.tasks.ReturnTask(ctx, ret); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, accepted, stewardv1.TaskStatus_TASK_STATUS_ACCEPTED)
	waitStatus(t, c, returned, stewardv1.TaskStatus_TASK_STATUS_RUNNING)

	m := scrape(t, p.url)
	for series, want := range map[string]float64{
		`steward_tasks{status="accepted"}`:                          1,
		`steward_tasks{status="running"}`:                           1,
		`steward_task_success_ratio`:                                1,   // one ended, accepted
		`steward_accepted_output_ratio`:                             0.5, // one round accepted, one returned
		`steward_cost_per_accepted_task_micros{currency="EUR"}`:     2000,
		`steward_tokens_per_accepted_task`:                          50,
		`steward_time_to_accepted_seconds_count`:                    1,
		`steward_time_to_accepted_seconds_bucket{le="+Inf"}`:        1,
		`steward_human_intervention_ratio`:                          0,
		`steward_permit_latency_seconds_count{approval="required"}`: 0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present: %v), want %v", series, got, ok, want)
		}
	}
}
