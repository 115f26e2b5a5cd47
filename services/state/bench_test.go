package state_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// BenchmarkProjectionRebuild measures how fast a state plane rebuilds its
// views from the log on start: 5,000 tasks of 4 events each. Run:
//
//	go test -run '^$' -bench ProjectionRebuild -benchtime 3x ./services/state/
func BenchmarkProjectionRebuild(b *testing.B) {
	const tasks, perTask = 5000, 4
	env := stewardtest.NewEnv(b)
	log := env.Log
	ctx := context.Background()
	for i := range tasks {
		env.Append(event.RandomID(), []event.Payload{
			&stewardv1.TaskCreated{Contract: contract(i)}, &stewardv1.TaskStarted{},
			&stewardv1.TaskPaused{Reason: "r"}, &stewardv1.TaskResumed{},
		}[:perTask]...)
	}
	const last = tasks * perTask
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		p := state.NewProjection(slog.New(slog.DiscardHandler))
		fctx, cancel := context.WithCancel(ctx)
		go func() { _ = log.Follow(fctx, "", 0, p.Apply, nil) }()
		if err := p.WaitFor(ctx, last); err != nil {
			b.Fatal(err)
		}
		cancel()
		if len(p.Snapshot()) != tasks {
			b.Fatal("rebuild lost tasks")
		}
	}
	b.ReportMetric(float64(last*b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkProjectionApplyLongTask measures what folding one event into a
// task's view costs early and late in a task of 300 actions: the events of
// its first 20 actions against those of its last 20 (281–300). The view is
// folded in place, never copied per event. Run:
//
//	go test -run '^$' -bench ProjectionApplyLongTask ./services/state/
func BenchmarkProjectionApplyLongTask(b *testing.B) {
	const actions, window = 300, 20
	h := running()
	var starts []int // index in h of each action's first event
	for i := range actions {
		id := fmt.Sprint("a", i)
		starts = append(starts, len(h))
		h = append(h, act(id, "search", "web", "r1")...)
		h = append(h, succeededOutcome(id, 1))
	}
	starts = append(starts, len(h))
	recs := stewardtest.History(b, "long", h...)
	var early, late time.Duration
	for b.Loop() {
		p := state.NewProjection(slog.New(slog.DiscardHandler))
		for i, rec := range recs {
			start := time.Now()
			if err := p.Apply(rec); err != nil {
				b.Fatal(err)
			}
			switch d := time.Since(start); {
			case i >= starts[0] && i < starts[window]:
				early += d
			case i >= starts[actions-window] && i < starts[actions]:
				late += d
			}
		}
		if p.Rejected() != 0 {
			b.Fatal("the fold refused an event")
		}
	}
	events := float64(b.N * (starts[window] - starts[0]))
	b.ReportMetric(float64(early.Nanoseconds())/events, "first20-ns/event")
	b.ReportMetric(float64(late.Nanoseconds())/events, "last20-ns/event")
}

// BenchmarkReadOneAction compares reading one action of a task of 300
// actions through the projection with reading the whole task, as GetAction
// and GetTask do. Run:
//
//	go test -run '^$' -bench ReadOneAction ./services/state/
func BenchmarkReadOneAction(b *testing.B) {
	for _, n := range []int{1, 300} {
		h := running()
		for i := range n {
			id := fmt.Sprint("a", i)
			h = append(h, act(id, "search", "web", "r1")...)
			h = append(h, succeededOutcome(id, 1))
		}
		p := state.NewProjection(slog.New(slog.DiscardHandler))
		for _, rec := range stewardtest.History(b, "long", h...) {
			_ = p.Apply(rec)
		}
		last := fmt.Sprint("a", n-1)
		b.Run(fmt.Sprint("GetAction/actions=", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Action("long", last); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprint("GetTask/actions=", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Get("long"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStallCheck measures one look of the watchdog at 5,000 working
// tasks, each with ten succeeded actions and one awaiting approval: none
// is stalled, so the look reads views only. "short" looks where every task
// has been quiet past the re-drive bound, so each one's actions are
// judged; "long" where none is quiet for the bound (the early return every
// look took before the re-drive bound, under the 15 min threshold). The
// watchdog looks every 5 s. Run:
//
//	go test -run '^$' -bench StallCheck ./services/state/
func BenchmarkStallCheck(b *testing.B) {
	const tasks, done = 5000, 10
	h := running()
	for i := range done {
		id := fmt.Sprint("a", i)
		h = append(h, act(id, "search", "web", "r1")...)
		h = append(h, succeededOutcome(id, 1))
	}
	h = append(h, &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "ask", ProposalId: "p-ask", Tool: "wire", ActionHash: "h", RequestHash: "r"}},
		&stewardv1.PolicyEvaluated{ActionId: "ask", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "apv", ActionId: "ask", ActionHash: "h"}})
	p := state.NewProjection(slog.New(slog.DiscardHandler))
	var seq uint64
	for i := range tasks {
		for _, rec := range stewardtest.History(b, fmt.Sprint("t", i), h...) {
			seq++
			rec.Sequence = seq
			_ = p.Apply(rec)
		}
	}
	now := time.Now()
	for _, c := range []struct {
		name string
		at   time.Time
	}{{"short", now.Add(time.Minute)}, {"long", now.Add(-time.Minute)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if got := p.Quiet(c.at, state.DefaultRedriveAfter); len(got) != 0 {
					b.Fatalf("%d tasks stalled, want none", len(got))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks), "ns/task")
		})
	}
}
