package control

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// fakeChain is a chain whose events link by hash, read as the log's
// ReadScheduleAfter reads: the events stored after a sequence.
type fakeChain struct {
	mu     sync.Mutex
	recs   []*stewardv1.EventRecord
	afters []uint64 // the sequences each read asked after
}

func (f *fakeChain) add(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		var prev []byte
		if k := len(f.recs); k > 0 {
			prev = f.recs[k-1].Event.Hash
		}
		seq := uint64(len(f.recs)+1) * 10 // sequences of other chains between
		f.recs = append(f.recs, &stewardv1.EventRecord{Sequence: seq, Event: &stewardv1.Event{
			EventId: fmt.Sprint("ev", seq), PrevHash: prev, Hash: fmt.Appendf(nil, "h%d", seq)}})
	}
}

func (f *fakeChain) after(_ context.Context, _ string, after uint64) ([]*stewardv1.EventRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.afters = append(f.afters, after)
	var out []*stewardv1.EventRecord
	for _, r := range f.recs {
		if r.Sequence > after {
			out = append(out, r)
		}
	}
	return out, nil
}

// countEvents is a fold that counts what it applied.
func countEvents(s *stewardv1.Schedule, r *stewardv1.EventRecord) error {
	s.RunsStarted++
	s.LastSequence = r.Sequence
	return nil
}

func newFakeCache(f *fakeChain) *chainCache[*stewardv1.Schedule] {
	return newChainCache(func() *stewardv1.Schedule { return &stewardv1.Schedule{} }, f.after, countEvents)
}

func TestChainCacheReadsOnlyWhatIsNew(t *testing.T) {
	f := &fakeChain{}
	c := newFakeCache(f)
	ctx := context.Background()
	if _, _, err := c.load(ctx, "s1", "schedule"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("an empty chain: got %v, want NotFound", err)
	}
	f.add(3)
	s, head, err := c.load(ctx, "s1", "schedule")
	if err != nil || s.RunsStarted != 3 || head.Sequence != 30 || string(head.Hash) != "h30" {
		t.Fatalf("first fold: %v, %d events, head %d %q", err, s.RunsStarted, head.Sequence, head.Hash)
	}
	s.RunsStarted = 99 // a caller's change must not reach the cache
	f.add(2)
	s, head, err = c.load(ctx, "s1", "schedule")
	if err != nil || s.RunsStarted != 5 || head.Sequence != 50 {
		t.Fatalf("second fold: %v, %d events, head %d", err, s.RunsStarted, head.Sequence)
	}
	if s, _, _ = c.load(ctx, "s1", "schedule"); s.RunsStarted != 5 {
		t.Fatalf("a fold with nothing new: %d events, want 5", s.RunsStarted)
	}
	if want := []uint64{0, 0, 30, 50}; fmt.Sprint(f.afters) != fmt.Sprint(want) {
		t.Fatalf("reads asked after %v, want %v", f.afters, want)
	}
}

func TestChainCacheRefusesABrokenLink(t *testing.T) {
	f := &fakeChain{}
	c := newFakeCache(f)
	f.add(2)
	if _, _, err := c.load(context.Background(), "s1", "schedule"); err != nil {
		t.Fatal(err)
	}
	f.add(1)
	f.recs[2].Event.PrevHash = []byte("forged")
	if _, _, err := c.load(context.Background(), "s1", "schedule"); !errs.Is(err, errs.Corrupt) {
		t.Fatalf("an event that does not follow its cached head: got %v, want Corrupt", err)
	}
}

func TestChainCacheConcurrentLoads(t *testing.T) {
	f := &fakeChain{}
	c := newFakeCache(f)
	f.add(1)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				if i == 0 {
					f.add(1)
				}
				s, head, err := c.load(context.Background(), "s1", "schedule")
				if err != nil || s.LastSequence != head.Sequence || s.RunsStarted*10 != head.Sequence {
					t.Errorf("a fold and its head disagree: %v, %d events, head %d", err, s.RunsStarted, head.Sequence)
					return
				}
			}
		})
	}
	wg.Wait()
}
