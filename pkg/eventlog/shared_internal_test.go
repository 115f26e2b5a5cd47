package eventlog

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLookupsAreSharedAndNeverStale: one caller's lookup is under way
// when 63 more ask for the last sequence of the same filter. None of them
// gets that lookup's answer — begun before they asked, it could miss what
// their own commands wrote — and all 63 share the next one: two lookups
// in all.
func TestLookupsAreSharedAndNeverStale(t *testing.T) {
	const filter = "steward.task.*.task.created"
	var s sharedLookups
	var started atomic.Uint64 // lookups begun so far; a lookup answers its own number
	release := make(chan struct{})
	fn := func(context.Context, string) (uint64, error) {
		n := started.Add(1)
		<-release
		return n, nil
	}
	const callers = 64
	var wg sync.WaitGroup
	stale := make(chan string, callers)
	ask := func() {
		before := started.Load() // lookups begun before this call
		got, err := s.last(context.Background(), filter, fn)
		switch {
		case err != nil:
			stale <- err.Error()
		case got <= before:
			stale <- "a caller was answered by a lookup begun before it asked"
		}
	}
	wg.Go(ask)
	waitFor(t, func() bool { return started.Load() == 1 })
	for range callers - 1 {
		wg.Go(ask)
	}
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		next := s.filters[filter].next
		return next != nil && next.callers == callers-1
	})
	close(release)
	wg.Wait()
	close(stale)
	for msg := range stale {
		t.Error(msg)
	}
	if n := started.Load(); n != 2 {
		t.Errorf("%d lookups for one caller and then %d together; want 2", n, callers-1)
	}
	// The last lookup's goroutine lets go of the filter once it finds no
	// one waiting.
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.filters) == 0
	})
}

// waitFor waits up to 5 s for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		runtime.Gosched()
	}
}
