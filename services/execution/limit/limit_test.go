package limit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/limit"
)

func gate(t *testing.T) *limit.Gate {
	t.Helper()
	bus := stewardtest.StartBus(t)
	kv, err := bucket.Open(context.Background(), bus.JS, limit.BucketConfig(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	return limit.New(kv)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestACapIsHeldUnderRacesAndLeases: of 20 holders racing for a cap of 3,
// exactly 3 get in; a holder asking again keeps its slot; a slot given
// back lets the next in; and a holder that never gives its slot back
// loses it when its lease ends, not before.
func TestACapIsHeldUnderRacesAndLeases(t *testing.T) {
	g, ctx := gate(t), context.Background()
	l := limit.Limits{MaxConcurrent: 3}
	const lease = time.Minute
	var mu sync.Mutex
	var in []string
	var wg sync.WaitGroup
	for i := range 20 {
		h := string(rune('a' + i))
		wg.Go(func() {
			wait, err := g.Take(ctx, "tool", h, l, lease, t0)
			if err != nil {
				t.Error(err)
			}
			if wait == 0 {
				mu.Lock()
				in = append(in, h)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(in) != 3 {
		t.Fatalf("%d holders got in under a cap of 3: %v", len(in), in)
	}
	if wait, _ := g.Take(ctx, "tool", in[0], l, lease, t0); wait != 0 {
		t.Errorf("a holder asking again waits %s; it holds a slot", wait)
	}
	if wait, _ := g.Take(ctx, "tool", "late", l, lease, t0); wait == 0 {
		t.Fatal("a fourth holder got in")
	}
	if err := g.Release(ctx, "tool", in[1], t0); err != nil {
		t.Fatal(err)
	}
	if wait, _ := g.Take(ctx, "tool", "late", l, lease, t0); wait != 0 {
		t.Fatalf("a slot given back was not taken: wait %s", wait)
	}
	if wait, _ := g.Take(ctx, "tool", "later", l, lease, t0.Add(lease-time.Second)); wait == 0 {
		t.Fatal("a slot was taken before its holder's lease ended")
	}
	if wait, _ := g.Take(ctx, "tool", "later", l, lease, t0.Add(lease)); wait != 0 {
		t.Fatalf("the slots of holders whose lease ended were not freed: wait %s", wait)
	}
	if wait, _ := g.Take(ctx, "other", "x", l, lease, t0); wait != 0 {
		t.Errorf("another key shares the cap: wait %s", wait)
	}
}

// TestARenewedSlotOutlivesItsFirstLease: a holder that renews keeps its
// slot past its first lease; once it stops, the slot comes back a lease
// after the last renewal. A renewal after the lease ended takes the slot
// again while the cap has room, and says it holds none when it has not.
func TestARenewedSlotOutlivesItsFirstLease(t *testing.T) {
	g, ctx := gate(t), context.Background()
	l := limit.Limits{MaxConcurrent: 1}
	const lease = 10 * time.Second
	if wait, err := g.Take(ctx, "tool", "a", l, lease, t0); err != nil || wait != 0 {
		t.Fatalf("take: wait %s, %v", wait, err)
	}
	renewed := t0.Add(8 * time.Second)
	if held, err := g.Renew(ctx, "tool", "a", l, lease, renewed); err != nil || !held {
		t.Fatalf("renew: held %v, %v", held, err)
	}
	if wait, _ := g.Take(ctx, "tool", "b", l, lease, t0.Add(lease+time.Second)); wait == 0 {
		t.Fatal("a renewed slot was taken at the end of its first lease")
	}
	late := renewed.Add(lease)
	if held, err := g.Renew(ctx, "tool", "a", l, lease, late); err != nil || !held {
		t.Fatalf("a renewal too late, the cap with room: held %v, %v; want the slot taken again", held, err)
	}
	if wait, _ := g.Take(ctx, "tool", "b", l, lease, late); wait == 0 {
		t.Fatal("a slot taken again by a late renewal was given to another")
	}
	gone := late.Add(lease)
	if wait, _ := g.Take(ctx, "tool", "b", l, lease, gone); wait != 0 {
		t.Fatalf("a slot not renewed for a lease was kept: wait %s", wait)
	}
	if held, err := g.Renew(ctx, "tool", "a", l, lease, gone); err != nil || held {
		t.Fatalf("a renewal too late, the cap full: held %v, %v; want no slot", held, err)
	}
}

// TestPeekTakesNothing: a peek says what a take would, and why, without
// taking the slot.
func TestPeekTakesNothing(t *testing.T) {
	g, ctx := gate(t), context.Background()
	l := limit.Limits{MaxConcurrent: 1}
	for range 2 {
		if wait, full, err := g.Peek(ctx, "tool", "a", l, t0); err != nil || wait != 0 || full {
			t.Fatalf("peek at an empty cap: wait %s, full %v, %v", wait, full, err)
		}
	}
	if wait, _ := g.Take(ctx, "tool", "a", l, time.Minute, t0); wait != 0 {
		t.Fatalf("a take after two peeks waits %s", wait)
	}
	if wait, full, _ := g.Peek(ctx, "tool", "b", l, t0); wait == 0 || !full {
		t.Fatalf("peek at a full cap: wait %s, full %v", wait, full)
	}
	paced := limit.Limits{Rate: 1}
	g.Take(ctx, "paced", "", paced, 0, t0)
	if wait, full, _ := g.Peek(ctx, "paced", "", paced, t0); wait != time.Second || full {
		t.Fatalf("peek at a spent rate: wait %s, full %v; want 1s, not full", wait, full)
	}
}

// TestARateLetsABurstThenOneAnInterval: at 10 a second with bursts of 3,
// three takes at once get in, the fourth waits a tenth of a second, and
// after a quiet second the burst is there again.
func TestARateLetsABurstThenOneAnInterval(t *testing.T) {
	g, ctx := gate(t), context.Background()
	l := limit.Limits{Rate: 10, Burst: 3}
	for i := range 3 {
		if wait, err := g.Take(ctx, "tool", "", l, 0, t0); err != nil || wait != 0 {
			t.Fatalf("take %d of the burst: wait %s, %v", i+1, wait, err)
		}
	}
	wait, err := g.Take(ctx, "tool", "", l, 0, t0)
	if err != nil || wait != 100*time.Millisecond {
		t.Fatalf("the take past the burst: wait %s, %v; want 100ms", wait, err)
	}
	if wait, _ := g.Take(ctx, "tool", "", l, 0, t0.Add(wait)); wait != 0 {
		t.Fatalf("a take after the wait: wait %s", wait)
	}
	for i := range 3 {
		if wait, _ := g.Take(ctx, "tool", "", l, 0, t0.Add(time.Second)); wait != 0 {
			t.Fatalf("take %d of the burst after a quiet second: wait %s", i+1, wait)
		}
	}
}
