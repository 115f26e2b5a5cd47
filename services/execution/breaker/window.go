package breaker

import (
	"math"
	"time"
)

// buckets is how many slices a window is cut into. More buckets age
// outcomes out more smoothly; ten keeps the error under a tenth of the
// window at a fixed, small cost per breaker.
const buckets = 10

// window counts outcomes over a sliding span of time in a fixed ring of
// buckets, so a breaker's memory does not grow with its traffic. An outcome
// ages out between Window minus one bucket and Window after it was counted.
type window struct {
	width  time.Duration // span of one bucket
	slots  [buckets]bucket
	latest int64 // highest bucket index seen, so a clock step back does not resurrect old buckets
}

// bucket holds the counts for one slice of time, identified by its index
// (time since the epoch divided by the bucket width).
type bucket struct {
	index              int64
	requests, failures int
}

func newWindow(span time.Duration) window {
	return window{width: max(span/buckets, 1), latest: math.MinInt64}
}

// current returns the bucket index for now, never earlier than one already
// seen.
func (w *window) current(now time.Time) int64 {
	ns, width := now.UnixNano(), int64(w.width)
	i := ns / width
	if ns%width != 0 && ns < 0 {
		i-- // floor, for times before the epoch
	}
	w.latest = max(w.latest, i)
	return w.latest
}

// add counts one outcome at now.
func (w *window) add(now time.Time, failed bool) {
	i := w.current(now)
	b := &w.slots[mod(i, buckets)]
	if b.index != i {
		*b = bucket{index: i}
	}
	b.requests++
	if failed {
		b.failures++
	}
}

// counts returns the outcomes counted in the window ending at now.
func (w *window) counts(now time.Time) (requests, failures int) {
	i := w.current(now)
	for _, b := range w.slots {
		if b.index > i-buckets && b.index <= i {
			requests += b.requests
			failures += b.failures
		}
	}
	return requests, failures
}

// reset forgets every outcome.
func (w *window) reset() {
	w.slots = [buckets]bucket{}
}

func mod(i, n int64) int64 {
	return ((i % n) + n) % n
}
