package execution_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/stores"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// process is an execution worker with its own connection to the bus, so
// that closing the connection is the worker's death as far as the log can
// tell: no heartbeat, no ack, no outcome.
type process struct {
	nc    *nats.Conn
	plane *execution.Plane
}

func (b *harness) process(name, consumer string) *process {
	b.t.Helper()
	ctx := context.Background()
	nc, err := b.ConnectAs(execution.PlaneName) // as a serve worker would
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.t.Fatal(err)
	}
	set, err := stores.Open(ctx, js, stores.Config{Logger: b.Logger, Plane: execution.PlaneName})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(set.Close)
	cfg := b.cfg
	// The tools as the harness's registry has them already; the process's
	// own would learn them from the log a moment later.
	cfg.Worker, cfg.Consumer, cfg.Tasks, cfg.Requests, cfg.Results, cfg.Timers = name, consumer, set.Tasks, set.Requests, set.Results, set.Timers
	cfg.Limits = openGate(b.t, js) // the same bucket, through its own connection
	p, err := execution.New(set.Log, b.Logger.With("proc", name), cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		b.t.Fatal(err)
	}
	return &process{nc: nc, plane: p}
}

// TestRetryCallOfADeadWorkerIsTakenOverWithinTheLease: two
// workers on their own consumers (as e2e/race_test.go runs them) both get
// the timer that ends an action's retry wait. One dispatches attempt 2 and
// dies mid-call. The other must take the call over within its lease (the
// issue: "the other worker takes over within the lease time plus 10 s").
// When the survivor read the action as waiting and lost the dispatch race,
// attempt() returns nil, the timer is acknowledged, and nothing but the
// stall mark (15 min) ever comes back to the action.
//
// With one action, the survivor is free after the race; it fails when it
// read the action as waiting (attempt() returns nil on FailedPrecondition
// and the timer is acked) — a race, so not every run. With two actions due
// together it fails every run: the survivor's timer consumer handles one
// timer at a time, and it is itself blocked in the call of the other
// action, so even a Later redelivery of the dead worker's timer waits for
// that call to end.
func TestRetryCallOfADeadWorkerIsTakenOverWithinTheLease(t *testing.T) {
	t.Run("one action", func(t *testing.T) { retryTakeover(t, 1, false) })
	t.Run("two actions", func(t *testing.T) { retryTakeover(t, 2, false) })
	// The binary's setup: one consumer shared by every worker. Each
	// fired timer goes to one worker; the dead worker's comes back to the
	// survivor after the ack wait, but the survivor's timer loop is busy
	// with its own call and pulls nothing until that call ends.
	t.Run("two actions, shared consumer", func(t *testing.T) { retryTakeover(t, 2, true) })
}

func retryTakeover(t *testing.T, n int, shared bool) {
	b := newHarness(t, breaker.Config{})
	// Every call goes on until the test ends.
	ts := stewardtest.StartTool(t).Always(callPath, stewardtest.Answer{Work: true, Hold: stewardtest.HoldUntilRelease})
	b.register(ts, "charge", false, func(c *stewardv1.ToolContract) {
		c.Timeout = durationpb.New(time.Minute)
	})
	b.plane.Stop()

	var tasks, actions []string
	until := time.Now().Add(1500 * time.Millisecond)
	for i := range n {
		taskID, actionID := b.permit(fmt.Sprint("t-sep-", i), "charge", "card")
		// A worker long gone made attempt 1, which failed transiently.
		b.Append(taskID, &stewardv1.ActionClaimed{ActionId: actionID, PermitId: "pm-" + actionID, Worker: "old"},
			&stewardv1.ActionDispatched{ActionId: actionID, Attempt: 1, Worker: "old"},
			&stewardv1.ActionWaiting{ActionId: actionID, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Until: timestamppb.New(until), Reason: "attempt 1 failed: 503"})
		tasks, actions = append(tasks, taskID), append(actions, actionID)
	}
	ca, cb := "execution-wa", "execution-wb"
	if shared {
		ca, cb = "execution-shared", "execution-shared"
	}
	procs := map[string]*process{"wa": b.process("wa", ca), "wb": b.process("wb", cb)}
	var survivor *process
	t.Cleanup(func() { // after the release below
		if survivor != nil {
			survivor.plane.Stop()
		}
	})
	t.Cleanup(ts.Release) // runs first: lets the calls end

	// Every attempt 2 goes out.
	for i := range n {
		b.WaitAction(tasks[i], actions[i], func(a *stewardv1.Action) bool {
			return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED && a.GetAttempt() == 2
		})
	}
	// A worker that dispatched dies: wa, unless wb won every race (the
	// workers are alike, so either is the case to test; always killing
	// wa left the test skipped on most runs of one action).
	claimedBy := make([]string, n)
	for i := range n {
		tk, _, _ := b.Tasks.Load(context.Background(), tasks[i])
		claimedBy[i] = task.FindAction(tk, actions[i]).ClaimedBy
	}
	dead := "wa"
	if !slices.Contains(claimedBy, dead) {
		dead = "wb"
	}
	survivor = procs[map[string]string{"wa": "wb", "wb": "wa"}[dead]]
	procs[dead].nc.Close()
	var mine []int
	for i, by := range claimedBy {
		if by == dead {
			mine = append(mine, i)
		}
	}
	t.Logf("%s dispatched attempt 2 of %d of %d actions, then died", dead, len(mine), n)
	if len(mine) == 0 {
		t.Fatalf("attempt 2 was dispatched by %v, neither worker", claimedBy)
	}
	// The bound: taken over within the lease + 10 s.
	stewardtest.Eventually(t, b.cfg.Lease+10*time.Second, func() (bool, string) {
		stuck := 0
		for _, i := range mine {
			tk, _, _ := b.Tasks.Load(context.Background(), tasks[i])
			if task.FindAction(tk, actions[i]).Status == stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED {
				stuck++
			}
		}
		return stuck == 0, fmt.Sprintf("%d of %d calls of the dead worker still dispatched after its lease (%s) ran out: nobody takes them over", stuck, len(mine), b.cfg.Lease)
	})
}
