package state_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

func contract(i int) *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		Intent: fmt.Sprintf("task %d", i), DesiredOutcome: "done", RequesterRef: "user:a",
		AccountableOwnerRef: "user:a", RiskTier: stewardv1.RiskTier_RISK_TIER_LOW,
	}
}

// TestRebuiltProjectionEqualsLive writes task histories with the live state
// plane projecting, then rebuilds a projection from an empty state and
// compares every view.
func TestRebuiltProjectionEqualsLive(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	live := state.New(log, logger)
	if err := live.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer live.Stop()

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			history := []event.Payload{&stewardv1.TaskCreated{Contract: contract(i)}, &stewardv1.TaskStarted{}}
			switch i % 3 {
			case 0:
				history = append(history, &stewardv1.TaskCancelled{Reason: "changed plans"})
			case 1:
				history = append(history, &stewardv1.TaskPaused{}, &stewardv1.TaskResumed{}, &stewardv1.TaskPaused{Reason: "again"})
			}
			if err := appendHistory(ctx, log, fmt.Sprint("task-", i), history...); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()

	last := lastSequence(t, log)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := live.Views().WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}
	rebuilt := state.NewProjection(logger)
	rctx, rcancel := context.WithCancel(ctx)
	go func() {
		_ = log.Follow(rctx, "", 0, rebuilt.Apply, nil)
	}()
	if err := rebuilt.WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}
	rcancel()

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

// appendHistory appends payloads as one task's history, in order.
func appendHistory(ctx context.Context, log *eventlog.Log, taskID string, payloads ...event.Payload) error {
	steps := make([]by, len(payloads))
	for i, p := range payloads {
		steps[i] = by{payload: p}
	}
	return appendBy(ctx, log, taskID, steps...)
}

// lastSequence finds the stream's last sequence by following it to the end.
func lastSequence(t *testing.T, log *eventlog.Log) uint64 {
	t.Helper()
	var last uint64
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := log.Follow(ctx, "", 0, func(rec *stewardv1.EventRecord) error {
		last = rec.Sequence
		return nil
	}, nil)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	return last
}

func TestListPagesAreStable(t *testing.T) {
	p := state.NewProjection(slog.New(slog.DiscardHandler))
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	for i := range 7 {
		if err := appendHistory(ctx, log, fmt.Sprint("t", i), &stewardv1.TaskCreated{Contract: contract(i)}); err != nil {
			t.Fatal(err)
		}
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = log.Follow(fctx, "", 0, p.Apply, nil) }()
	if err := p.WaitFor(ctx, 7); err != nil {
		t.Fatal(err)
	}
	var seen []string
	after := 0
	for {
		page, next := p.List(nil, after, 3)
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
	if page, _ := p.List([]stewardv1.TaskStatus{stewardv1.TaskStatus_TASK_STATUS_RUNNING}, 0, 10); len(page) != 0 {
		t.Fatalf("no task was started, but %d are listed as running", len(page))
	}
}

// TestRefusedEventMakesTheViewCorrupt stores an event that the fold must
// refuse (a start after a cancel, validly sealed): the task's view is not
// served as if it were current.
func TestRefusedEventMakesTheViewCorrupt(t *testing.T) {
	p := state.NewProjection(slog.New(slog.DiscardHandler))
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	err := appendHistory(ctx, log, "bad", &stewardv1.TaskCreated{Contract: contract(0)}, &stewardv1.TaskCancelled{}, &stewardv1.TaskStarted{})
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = log.Follow(fctx, "", 0, p.Apply, nil) }()
	if err := p.WaitFor(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get("bad"); !errs.Is(err, errs.Corrupt) {
		t.Fatalf("Get = %v, want a corrupt-view error", err)
	}
	if p.Rejected() != 1 {
		t.Fatalf("rejected = %d, want 1", p.Rejected())
	}
}
