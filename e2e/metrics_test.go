package e2e_test

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		m = scrape(t, p.url)
		// The reactions have seen every event once nothing is pending.
		pending, consumers := sumOf(m, `steward_consumer_pending{consumer=`)
		if consumers > 0 && pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumers still behind after 10s: %d consumers, %v pending", consumers, pending)
		}
		time.Sleep(50 * time.Millisecond)
	}

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
	if _, n := sumOf(m, `steward_consumer_pending{consumer="governance-timers",stream="STEWARD_TIMERS"}`); n == 0 {
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
