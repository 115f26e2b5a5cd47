package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// Bounds of a stalled reader's cost (issue 27), as docs/errors.md ("What a
// bad request costs") states them.
const (
	listTasksCPUBound    = 300 * time.Millisecond
	slowReadersRSSBound  = 100 << 20
	zeroWindowRSSBound   = 32 << 20
	listTasksBody        = `{"pageSize":1000}`
	listTasksProcedure   = "/steward.v1.QueryService/ListTasks"
	boundedAnswersTasks  = 110
	boundedAnswersPlanKB = 225
)

// TestBoundedAnswers builds 110 tasks (STEWARD_BOUNDED_ANSWERS=n for n)
// with plans of about 0.9 MB, as the review of issue 27 did, and contracts
// of about 250 KB, against the real binary, and measures the
// largest ListTasks page: its size and CPU; what 10 clients that send it
// and never read the answer pin; and what one HTTP/2 connection with a
// zero window and 100 such streams pins, or 100 streams of a CreateTask
// sent again, whose small body is answered with a task of 0.9 MB. It takes minutes (each plan costs
// SubmitPlan most of a second), so it runs only when asked for:
//
//	STEWARD_BOUNDED_ANSWERS=1 go test -count=1 -timeout 20m -run TestBoundedAnswers -v ./e2e/
func TestBoundedAnswers(t *testing.T) {
	if os.Getenv("STEWARD_BOUNDED_ANSWERS") == "" {
		t.Skip("set STEWARD_BOUNDED_ANSWERS=1 to measure ListTasks over 110 tasks with large plans")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: cannot read a process's resident memory here")
	}
	p := startBinary(t, t.TempDir())
	tasks := boundedAnswersTasks
	if n, err := strconv.Atoi(os.Getenv("STEWARD_BOUNDED_ANSWERS")); err == nil && n > 1 {
		tasks = n
	}
	resend := heavyPlans(t, p.url, tasks)
	addr := strings.TrimPrefix(p.url, "http://")

	var sizes []int
	var cpus []time.Duration
	var page []byte
	for range 3 {
		before := procCPU(t, p)
		page = postListTasks(t, p.url)
		sizes = append(sizes, len(page))
		cpus = append(cpus, procCPU(t, p)-before)
	}
	size, cpu := median(sizes), median(cpus)
	var msg stewardv1.ListTasksResponse
	if err := protojson.Unmarshal(page, &msg); err != nil {
		t.Fatal(err)
	}
	items := proto.Size(&stewardv1.ListTasksResponse{Tasks: msg.Tasks})
	t.Logf("ListTasks{pageSize:1000} over %d tasks: %d bytes of JSON, %d tasks of %d protobuf bytes and a token %v, %v of CPU (medians of 3)",
		tasks, size, len(msg.Tasks), items, msg.NextPageToken != "", cpu)
	if items > rpc.MaxPageBytes || size > rpc.MaxPageBytes+1<<10 || msg.NextPageToken == "" || cpu > listTasksCPUBound {
		t.Fatalf("the largest ListTasks page holds %d protobuf bytes of tasks in %d bytes of JSON (token %q) and costs %v of CPU; want at most %d bytes of items, a token, and %v",
			items, size, msg.NextPageToken, cpu, rpc.MaxPageBytes, listTasksCPUBound)
	}

	pinned := rssPinnedBy(t, p, func() {
		for range 10 {
			slowReader(t, addr)
		}
	})
	t.Logf("10 slow readers pin %d MB", pinned>>20)
	if pinned > slowReadersRSSBound {
		t.Errorf("10 clients that never read their ListTasks pin %d MB; want at most %d MB", pinned>>20, slowReadersRSSBound>>20)
	}
	for _, c := range []struct{ name, procedure, body string }{
		{"ListTasks", listTasksProcedure, listTasksBody},
		{"CreateTask sent again", "/steward.v1.TaskService/CreateTask", string(resend)},
	} {
		pinned = rssPinnedBy(t, p, func() {
			waiting := answersWaiting(t, p.url)
			stewardtest.ZeroWindowStreams(t, addr, c.procedure, []byte(c.body), rpc.DefaultMaxConcurrentStreams)
			// Every stream's answer is built before RSS is read: all but
			// the few the connection's budget holds wait for it.
			stewardtest.Eventually(t, time.Minute, func() (bool, string) {
				now := answersWaiting(t, p.url)
				return now >= waiting+rpc.DefaultMaxConcurrentStreams-8, fmt.Sprintf("%v answers waiting", now)
			})
		})
		t.Logf("one zero-window HTTP/2 connection with %d streams of %s pins %d MB", rpc.DefaultMaxConcurrentStreams, c.name, pinned>>20)
		if pinned > zeroWindowRSSBound {
			t.Errorf("one HTTP/2 connection with a zero window and %d streams of %s pins %d MB; want at most %d MB", rpc.DefaultMaxConcurrentStreams, c.name, pinned>>20, zeroWindowRSSBound>>20)
		}
	}
}

// answersWaiting reads steward_rpc_responses_waiting from the binary's
// /metrics: answers built and waiting for bytes of a budget.
func answersWaiting(t *testing.T, url string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, "steward_rpc_responses_waiting "); ok {
			n, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no steward_rpc_responses_waiting in /metrics")
	return 0
}

// heavyPlans registers a tool that takes any params and makes n running
// tasks, 8 at a time, each with a plan of four action steps of
// boundedAnswersPlanKB of params, held back by a wait of an hour. Task 0
// has a small contract; it returns the body (Connect JSON) of its
// CreateTask, which sent again answers with the whole task.
func heavyPlans(t *testing.T, url string, n int) []byte {
	t.Helper()
	ctx := context.Background()
	if _, err := stewardv1connect.NewToolServiceClient(http.DefaultClient, url).RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: &stewardv1.ToolContract{
		Name: "noop", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC,
		Endpoint: &stewardv1.ToolContract_Builtin{Builtin: &stewardv1.BuiltinEndpoint{Kind: "noop"}},
	}})); err != nil {
		t.Fatal(err)
	}
	params, _ := structpb.NewStruct(map[string]any{"blob": strings.Repeat("b", boundedAnswersPlanKB<<10)})
	plan := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		{Id: "hold", Kind: &stewardv1.Step_Wait{Wait: &stewardv1.WaitStep{Wait: &stewardv1.WaitStep_Duration{Duration: durationpb.New(time.Hour)}}}},
	}}
	for i := range 4 {
		plan.Steps = append(plan.Steps, &stewardv1.Step{Id: fmt.Sprint("s", i), DependsOn: []string{"hold"},
			Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "noop", Target: fmt.Sprint("t", i), Params: params}}})
	}
	c := newClients(url)
	ids := make([]string, n)
	creates := make([]*stewardv1.CreateTaskRequest, n)
	for i := range creates {
		creates[i] = &stewardv1.CreateTaskRequest{RequestId: fmt.Sprint("heavy-", i), Contract: heavyContract()}
	}
	creates[0].Contract = contract()
	creates[0].Contract.AllowedTools = []string{"noop"}
	parallel(t, n, func(i int) error {
		resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(creates[i]))
		if err == nil {
			ids[i] = resp.Msg.Task.Contract.TaskId
		}
		return err
	})
	for _, id := range ids {
		waitStarted(t, c, id)
	}
	parallel(t, n, func(i int) error {
		_, err := c.tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: ids[i], Plan: plan, RequestId: "plan-" + ids[i]}))
		return err
	})
	resend, err := protojson.Marshal(creates[0])
	if err != nil {
		t.Fatal(err)
	}
	return resend
}

// parallel calls do for 0 … n-1, 8 at a time, and fails the test with the
// first error.
func parallel(t *testing.T, n int, do func(i int) error) {
	t.Helper()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n) && failed.Load() == nil; i = next.Add(1) - 1 {
				if err := do(int(i)); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
}

// heavyContract is a contract of about 250 KB, most of it 240 criteria
// for a reviewer of 1 KiB each: what makes a task's summary heavy, so that
// a page of them meets the page's byte bound.
func heavyContract() *stewardv1.TaskContract {
	k := contract()
	k.AllowedTools = []string{"noop"}
	k.AcceptanceOwnerRef = "user:rev"
	for i := range 240 {
		k.AcceptanceCriteria = append(k.AcceptanceCriteria, &stewardv1.AcceptanceCriterion{
			Id: fmt.Sprint("c", i), Description: strings.Repeat("d", 1<<10), RequiresReviewer: true})
	}
	return k
}

// postListTasks sends the largest ListTasks and returns its answer's body.
func postListTasks(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Post(url+listTasksProcedure, "application/json", strings.NewReader(listTasksBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("ListTasks: %d %v: %.200s", resp.StatusCode, err, body)
	}
	return body
}

// slowReader sends the largest ListTasks over HTTP/1.1 and never reads
// the answer; the connection closes at the end of the test.
func slowReader(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4 << 10)
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", listTasksProcedure, addr, len(listTasksBody), listTasksBody)
}

// rssPinnedBy returns how much the binary's resident memory grows when
// stall has left its readers stalled: measured once the server has
// answered three more ListTasks after them, so it has taken them all up.
func rssPinnedBy(t *testing.T, p *proc, stall func()) uint64 {
	t.Helper()
	before := readRSS(t, p)
	stall()
	for range 3 {
		postListTasks(t, p.url)
	}
	after := readRSS(t, p)
	t.Logf("RSS %d MB before, %d MB with the readers stalled", before>>20, after>>20)
	if after < before {
		return 0
	}
	return after - before
}

// procCPU reads the binary's CPU time, user and system, from /proc.
func procCPU(t *testing.T, p *proc) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th of the line, in clock ticks of 10 ms.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func median[T int | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
