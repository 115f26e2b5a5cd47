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

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/state"
)

func contract(i int) *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		Intent: fmt.Sprintf("task %d", i), DesiredOutcome: "done", RequesterRef: "user:a",
		AccountableOwnerRef: "user:a", RiskTier: stewardv1.RiskTier_RISK_TIER_LOW,
	}
}

// TestRebuiltProjectionEqualsLive drives tasks through their lifecycle with
// the live state plane projecting, then rebuilds a projection from an empty
// state and compares every view.
func TestRebuiltProjectionEqualsLive(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	ctl := control.New(log, logger)
	if err := ctl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer ctl.Stop()
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
			tk, _, err := ctl.CreateTask(ctx, "tester", &stewardv1.CreateTaskRequest{RequestId: fmt.Sprint("r", i), Contract: contract(i)})
			if err != nil {
				t.Error(err)
				return
			}
			id := tk.Contract.TaskId
			switch i % 3 {
			case 0:
				_, err = ctl.Apply(ctx, "tester", id, &stewardv1.TaskCancelled{Reason: "changed plans"})
			case 1:
				_, err = ctl.Apply(ctx, "tester", id, &stewardv1.TaskPaused{})
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// Let the starter reaction finish its work on the tasks still pending.
	time.Sleep(300 * time.Millisecond)

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
	ctl := control.New(log, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	for i := range 7 {
		if _, _, err := ctl.CreateTask(ctx, "tester", &stewardv1.CreateTaskRequest{Contract: contract(i)}); err != nil {
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
