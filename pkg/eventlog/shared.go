package eventlog

import (
	"context"
	"sync"
	"time"
)

// A lookup of the last event on a wildcard (LastOfTypes,
// LastTaskSequence) costs the server a walk of the stream's per-subject
// index: every subject of every task (docs/capacity.md, "Running tasks").
// Commands that check a quota each ask it before they answer, many at
// once under load, and each needs only a sequence the log had reached
// when it asked. So callers share: each waits for the next lookup begun
// after it arrived, and one lookup answers everyone who arrived before it
// began.

// sharedLookups runs the lookups of each filter one at a time, each for
// every caller waiting when it begins. Its zero value is ready.
type sharedLookups struct {
	mu      sync.Mutex
	filters map[string]*sharedLookup
}

// sharedLookup is the state of one filter's lookups.
// A filter is in the map while a goroutine runs its lookups (run).
type sharedLookup struct {
	next *lookupResult // what callers arriving now will get; nil until one arrives
}

type lookupResult struct {
	done    chan struct{}
	callers int // how many it answers
	seq     uint64
	err     error
}

// sharedLookupWait bounds one shared lookup: a caller's own deadline
// cannot, as many callers share it.
const sharedLookupWait = 5 * time.Second

// last returns the result of a lookup of filter by fn that began after
// the call did, shared with the callers that arrived before it began.
func (s *sharedLookups) last(ctx context.Context, filter string, fn func(context.Context, string) (uint64, error)) (uint64, error) {
	s.mu.Lock()
	if s.filters == nil {
		s.filters = map[string]*sharedLookup{}
	}
	f := s.filters[filter]
	if f == nil {
		f = &sharedLookup{}
		s.filters[filter] = f
		go s.run(f, filter, fn)
	}
	if f.next == nil {
		f.next = &lookupResult{done: make(chan struct{})}
	}
	mine := f.next
	mine.callers++
	s.mu.Unlock()
	select {
	case <-mine.done:
		return mine.seq, mine.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run looks filter up for each group of callers in turn until none waits.
func (s *sharedLookups) run(f *sharedLookup, filter string, fn func(context.Context, string) (uint64, error)) {
	for {
		s.mu.Lock()
		r := f.next
		f.next = nil
		if r == nil {
			delete(s.filters, filter) // no one waits: the map holds only filters in use
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), sharedLookupWait)
		r.seq, r.err = fn(ctx, filter)
		cancel()
		close(r.done)
	}
}
