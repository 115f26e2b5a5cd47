package state_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

func contract(i int) *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		Intent: fmt.Sprintf("task %d", i), DesiredOutcome: "done", RequesterRef: "user:a",
		AccountableOwnerRef: "user:a", RiskTier: stewardv1.RiskTier_RISK_TIER_LOW,
	}
}

// TestRebuiltProjectionEqualsLive writes task histories, interleaved,
// with the live state plane projecting, then rebuilds a projection from an
// empty state and compares every view.
func TestRebuiltProjectionEqualsLive(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ctx := context.Background()
	live := startPlane(t, env.Log, env.Logger, state.Config{})

	histories := make([][]event.Payload, 20)
	for i := range histories {
		h := []event.Payload{&stewardv1.TaskCreated{Contract: contract(i)}, &stewardv1.TaskStarted{}}
		switch i % 3 {
		case 0:
			h = append(h, &stewardv1.TaskCancelled{Reason: "changed plans"})
		case 1:
			h = append(h, &stewardv1.TaskPaused{}, &stewardv1.TaskResumed{}, &stewardv1.TaskPaused{Reason: "again"})
		}
		histories[i] = h
	}
	// Step by step across the tasks, so that their events interleave.
	for step := range 5 {
		for i, h := range histories {
			if step < len(h) {
				env.Append(fmt.Sprint("task-", i), h[step])
			}
		}
	}

	last, err := env.Log.LastTaskSequence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := live.Views().WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}
	rebuilt := follow(t, env.Log)
	if err := rebuilt.WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}

	want, got := live.Views().Snapshot(), rebuilt.Snapshot()
	if len(want) != 20 || len(got) != len(want) {
		t.Fatalf("live has %d views, rebuilt %d; want 20 each", len(want), len(got))
	}
	for id, w := range want {
		if !proto.Equal(w, got[id]) {
			t.Errorf("task %s:\n live    %v\n rebuilt %v", id, w, got[id])
		}
	}
}

// startPlane starts a state plane over log; it stops when the test ends.
func startPlane(t *testing.T, log *eventlog.Log, logger *slog.Logger, cfg state.Config) *state.Plane {
	t.Helper()
	p := state.New(log, logger, cfg)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// follow returns a projection, from an empty state, that follows log
// until the test ends.
func follow(t testing.TB, log *eventlog.Log) *state.Projection {
	p := state.NewProjection(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = log.Follow(ctx, "", 0, p.Apply, nil) }()
	return p
}

// appendUnchecked appends payloads to task taskID as a faulty writer
// would, without asking the fold: for what a reader makes of a history
// the fold refuses.
func appendUnchecked(t *testing.T, log *eventlog.Log, taskID string, payloads ...event.Payload) {
	t.Helper()
	head := eventlog.Head{}
	for _, p := range payloads {
		rec, err := log.Append(context.Background(), head, stewardtest.Event(t, taskID, p))
		if err != nil {
			t.Fatalf("task %s: append %T: %v", taskID, p, err)
		}
		head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
	}
}

func TestListPagesAreStable(t *testing.T) {
	env := stewardtest.NewEnv(t)
	for i := range 7 {
		env.Append(fmt.Sprint("t", i), &stewardv1.TaskCreated{Contract: contract(i)})
	}
	p := follow(t, env.Log)
	if err := p.WaitFor(context.Background(), 7); err != nil {
		t.Fatal(err)
	}
	var seen []string
	after := 0
	for {
		page, next := p.List("", state.TaskFilter{}, after, 3, state.MaxScan, rpc.MaxPageBytes, rpc.PageItemBytes)
		for _, tk := range page {
			seen = append(seen, tk.Contract.Intent)
		}
		if next == 0 {
			break
		}
		after = next
	}
	if fmt.Sprint(seen) != "[task 0 task 1 task 2 task 3 task 4 task 5 task 6]" {
		t.Fatalf("paged through %v", seen)
	}
	if page, _ := p.List("", state.TaskFilter{Statuses: []stewardv1.TaskStatus{stewardv1.TaskStatus_TASK_STATUS_RUNNING}}, 0, 10, state.MaxScan, rpc.MaxPageBytes, rpc.PageItemBytes); len(page) != 0 {
		t.Fatalf("no task was started, but %d are listed as running", len(page))
	}
}

// TestListPagesTellNothingOfOtherTenants: a tenant's pages, and the
// page tokens that carry a position, are the same whether or not other
// tenants made tasks in between: a token that counted every tenant's
// tasks would tell a caller how busy the others are.
func TestListPagesTellNothingOfOtherTenants(t *testing.T) {
	pages := func(others int) []string {
		env := stewardtest.NewEnv(t)
		n := 0
		for i := range 4 {
			env.Append(fmt.Sprint("a", i), &stewardv1.TaskCreated{Contract: contract(i), Tenant: "acme"})
			for j := range others {
				env.Append(fmt.Sprint("b", i, "-", j), &stewardv1.TaskCreated{Contract: contract(j), Tenant: "globex"})
			}
			n += 1 + others
		}
		p := follow(t, env.Log)
		if err := p.WaitFor(context.Background(), uint64(n)); err != nil {
			t.Fatal(err)
		}
		var seen []string
		after := 0
		for {
			page, next := p.List("acme", state.TaskFilter{}, after, 1, state.MaxScan, rpc.MaxPageBytes, rpc.PageItemBytes)
			for _, tk := range page {
				seen = append(seen, fmt.Sprintf("%s@%d", tk.Contract.Intent, next))
			}
			if next == 0 {
				return seen
			}
			after = next
		}
	}
	alone, among := pages(0), pages(3)
	if fmt.Sprint(alone) != fmt.Sprint(among) {
		t.Fatalf("acme's pages alone: %v; among another tenant's tasks: %v", alone, among)
	}
}

// TestRefusedEventMakesTheViewCorrupt stores an event that the fold must
// refuse (a start after a cancel, validly sealed): the task's view is not
// served as if it were current.
func TestRefusedEventMakesTheViewCorrupt(t *testing.T) {
	env := stewardtest.NewEnv(t)
	appendUnchecked(t, env.Log, "bad", &stewardv1.TaskCreated{Contract: contract(0)}, &stewardv1.TaskCancelled{}, &stewardv1.TaskStarted{})
	p := follow(t, env.Log)
	if err := p.WaitFor(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get("bad"); !errs.Is(err, errs.Corrupt) {
		t.Fatalf("Get = %v, want a corrupt-view error", err)
	}
	if p.Rejected() != 1 {
		t.Fatalf("rejected = %d, want 1", p.Rejected())
	}
}
