package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// clusterLoad is how much load a cluster test applies: tasks created by
// clients callers at once, each proposing actions reads as soon as it is
// created. STEWARD_CLUSTER_TASKS, STEWARD_CLUSTER_ACTIONS (per task) and
// STEWARD_CLUSTER_CLIENTS override the defaults, sized for CI.
type clusterLoad struct {
	tasks, actions, clients int
	// pace, if set, is the time between two tasks' creations; until, if
	// set, keeps tasks coming past tasks until it is closed.
	pace  time.Duration
	until <-chan struct{}
}

func clusterLoadFromEnv(t *testing.T, def clusterLoad) clusterLoad {
	t.Helper()
	clusterEnvInt(t, "STEWARD_CLUSTER_TASKS", &def.tasks)
	clusterEnvInt(t, "STEWARD_CLUSTER_ACTIONS", &def.actions)
	clusterEnvInt(t, "STEWARD_CLUSTER_CLIENTS", &def.clients)
	return def
}

// clusterEnvInt sets *v from the environment variable name, a positive
// number, when it is set.
func clusterEnvInt(t *testing.T, name string, v *int) {
	t.Helper()
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", name, s)
		}
		*v = n
	}
}

// loadRun is what a load did: every task and action the API accepted,
// every answer's code, and the calls that failed for good.
type loadRun struct {
	mu       sync.Mutex
	tasks    []string
	actions  []proposedRead
	answers  map[string]int // code of every answer, retries included ("ok" for success)
	failures []string       // calls that failed for good, with code and message
	// accepted are the times proposals were accepted, in order.
	accepted []time.Time
	started  time.Time
}

type proposedRead struct {
	taskID, actionID, opKey string
}

func (r *loadRun) answered(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	code := "ok"
	if err != nil {
		code = connect.CodeOf(err).String()
	}
	r.answers[code]++
}

func (r *loadRun) failed(what string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf("%s: %s: %s", what, connect.CodeOf(err), err))
}

// proposedCount is how many proposals were accepted so far.
func (r *loadRun) proposedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.actions)
}

// acceptedAfter returns when the first proposal after at was accepted.
func (r *loadRun) acceptedAfter(at time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.accepted {
		if a.After(at) {
			return a, true
		}
	}
	return time.Time{}, false
}

// callWithRetry runs call until it succeeds or fails with anything but
// unavailable, or a connection the server's death cut (reset, EOF), which
// a client retries with backoff and the same request id, as the API asks;
// within bounds the whole.
func callWithRetry(r *loadRun, within time.Duration, call func() error) error {
	backoff := 25 * time.Millisecond
	deadline := time.Now().Add(within)
	for {
		err := call()
		r.answered(err)
		if !retryable(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// retryable reports whether a client retries err: unavailable, or a
// connection cut under the call (its plane was killed), which connect
// reports as canceled or unknown.
func retryable(err error) bool {
	return connect.CodeOf(err) == connect.CodeUnavailable ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// searchParams are the search tool's parameters for query q.
// clusterRefusedFor is how long a refused proposal is made again before
// its task is given up.
const clusterRefusedFor = 10 * time.Second

// callUntil runs call until it succeeds, whatever it answers, for up to
// within, and returns its last error.
func callUntil(r *loadRun, within time.Duration, call func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := call()
		r.answered(err)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond) // before proposing again
	}
}

func searchParams(q string) *structpb.Struct {
	s, err := structpb.NewStruct(map[string]any{"q": q})
	if err != nil {
		panic(err) // a string always converts
	}
	return s
}

func newLoadRun() *loadRun { return &loadRun{answers: map[string]int{}} }

// applyLoad creates l.tasks tasks (and more while l.until is open) from
// l.clients callers at once, spread over the control planes, each
// proposing l.actions reads right after CreateTask returns, records what
// happens in r, and returns once every call has answered for good. It may
// run on a goroutine of its own.
func applyLoad(d *clusterDeployment, l clusterLoad, run string, r *loadRun) {
	r.mu.Lock()
	r.started = time.Now()
	r.mu.Unlock()
	next := make(chan int)
	var wg sync.WaitGroup
	for range l.clients {
		wg.Go(func() {
			for i := range next {
				r.runTask(d.nextControl, l, fmt.Sprintf("%s-%d", run, i))
			}
		})
	}
	var tick <-chan time.Time
	if l.pace > 0 {
		ticker := time.NewTicker(l.pace)
		defer ticker.Stop()
		tick = ticker.C
	}
	for i := 0; i < l.tasks || open(l.until); i++ {
		if tick != nil {
			<-tick
		}
		next <- i
	}
	close(next)
	wg.Wait()
}

// open reports whether ch is set and not closed.
func open(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// runTask creates one task through control and proposes its reads,
// retrying what is unavailable; a refusal is recorded, not retried.
// control gives the client of each call: a caller moves on to another
// control plane when one is lost.
func (r *loadRun) runTask(control func() stewardv1connect.TaskServiceClient, l clusterLoad, requestID string) {
	ctx := context.Background()
	k := contract()
	k.AllowedTools = []string{"search"}
	var taskID string
	err := callWithRetry(r, time.Minute, func() error {
		resp, err := control().CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
		if err == nil {
			taskID = resp.Msg.Task.Contract.TaskId
		}
		return err
	})
	if err != nil {
		r.failed("create "+requestID, err)
		return
	}
	r.mu.Lock()
	r.tasks = append(r.tasks, taskID)
	r.mu.Unlock()
	for j := range l.actions {
		proposal := fmt.Sprintf("read-%d", j)
		var a *stewardv1.Action
		propose := func() error {
			resp, err := control().ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
				TaskId: taskID, ProposalId: proposal, Tool: "search", Target: "acct:42",
				Params: searchParams(fmt.Sprintf("incidents %s %d", requestID, j)), Rationale: argued,
			}))
			if err == nil {
				a = resp.Msg.Action
			}
			return err
		}
		err := callWithRetry(r, time.Minute, propose)
		if err != nil {
			// A refusal is a failure of the test; the proposal is made
			// again for a while all the same, so that the rest of the load
			// still runs through governance and execution. A task that
			// never takes it gets no more proposals.
			r.failed(fmt.Sprintf("propose %s on task %s", proposal, taskID), err)
			if err = callUntil(r, clusterRefusedFor, propose); err != nil {
				r.failed(fmt.Sprintf("gave up on task %s after %s of refusals of %s", taskID, clusterRefusedFor, proposal), err)
				return
			}
		}
		r.mu.Lock()
		r.actions = append(r.actions, proposedRead{taskID: taskID, actionID: a.ActionId, opKey: a.OpKey})
		r.accepted = append(r.accepted, time.Now())
		r.mu.Unlock()
	}
}

// ended reports whether an action's status is final.
func ended(s stewardv1.ActionStatus) bool {
	switch s {
	case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, stewardv1.ActionStatus_ACTION_STATUS_FAILED,
		stewardv1.ActionStatus_ACTION_STATUS_DENIED, stewardv1.ActionStatus_ACTION_STATUS_REJECTED,
		stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN:
		return true
	}
	return false
}

// clusterQuiet is how long the log may go without a new event, while some
// task is not done, before the wait gives up: a stranded task never moves
// again, while a reaction that retries moves within seconds.
const clusterQuiet = 30 * time.Second

// settle waits until every task of r has started and holds its credential
// and every action the API accepted has ended, as the state plane serves
// them, or until nothing has moved for clusterQuiet; it returns each task
// as last served.
func settle(t *testing.T, d *clusterDeployment, r *loadRun) map[string]*stewardv1.Task {
	t.Helper()
	want := map[string]int{}
	for _, a := range r.actions {
		want[a.taskID]++
	}
	seen := map[string]*stewardv1.Task{}
	pending := slices.Clone(r.tasks)
	lastEvents, moved := -1, time.Now()
	for len(pending) > 0 && time.Since(moved) < clusterQuiet {
		var still []string
		for _, id := range pending {
			resp, err := d.state().query.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: id}))
			if err != nil {
				still = append(still, id)
				continue
			}
			tk := resp.Msg.Task
			seen[id] = tk
			if !taskDone(tk, want[id]) {
				still = append(still, id)
			}
		}
		pending = still
		events := 0
		for _, tk := range seen {
			events += int(tk.EventCount)
		}
		if events != lastEvents {
			lastEvents, moved = events, time.Now()
		}
		if len(pending) > 0 {
			time.Sleep(200 * time.Millisecond) // between polls of the state plane
		}
	}
	return seen
}

func taskDone(tk *stewardv1.Task, actions int) bool {
	if tk.Status == stewardv1.TaskStatus_TASK_STATUS_PENDING || tk.Credential == nil || len(tk.Actions) < actions {
		return false
	}
	for _, a := range tk.Actions {
		if !ended(a.Status) {
			return false
		}
	}
	return true
}
