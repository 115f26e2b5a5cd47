package eventlog

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLookupsAreSharedAndNeverStale: 64 callers ask for the last sequence
// of one filter while lookups are under way. Each gets the answer of a
// lookup begun after it asked — never one begun before, which could miss
// what the caller's own command wrote — and callers who ask together
// share one: far fewer lookups than callers.
func TestLookupsAreSharedAndNeverStale(t *testing.T) {
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
	for i := range callers {
		wg.Go(func() {
			before := started.Load() // lookups begun before this call
			got, err := s.last(context.Background(), "steward.task.*.task.created", fn)
			if err != nil {
				stale <- err.Error()
				return
			}
			if got <= before {
				stale <- "caller answered by a lookup begun before it asked"
			}
		})
		if i == callers/2 {
			release <- struct{}{} // let the first lookup end while callers arrive
		}
	}
	close(release)
	wg.Wait()
	close(stale)
	for msg := range stale {
		t.Error(msg)
	}
	if n := started.Load(); n > 3 {
		t.Errorf("%d lookups for %d callers who asked together; want them shared (at most 3)", n, callers)
	}
	// The last lookup's goroutine lets go of the filter once it finds no
	// one waiting.
	deadline := time.Now().Add(5 * time.Second)
	for held := 1; held > 0; {
		s.mu.Lock()
		held = len(s.filters)
		s.mu.Unlock()
		if held > 0 && time.Now().After(deadline) {
			t.Fatalf("%d filters still held 5 s after every caller was answered; want none", held)
		}
		runtime.Gosched()
	}
}
