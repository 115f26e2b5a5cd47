package stewardtest

import (
	"bytes"
	"sync"
	"time"
)

// Clock is the clock a test gives a plane (its Config.Now): real time,
// moved on by Advance or Pass, so that a lease, a credential or a stall
// threshold runs out without the test waiting for it; or stopped at a time
// by Set. Safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	offset  time.Duration
	stopped time.Time // zero while the clock runs
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped.IsZero() {
		return c.stopped
	}
	return time.Now().Add(c.offset)
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped.IsZero() {
		c.stopped = c.stopped.Add(d)
		return
	}
	c.offset += d
}

// Pass moves a running clock just past at, if it is not there yet.
func (c *Clock) Pass(at time.Time) {
	if d := at.Sub(c.Now()); d > 0 {
		c.Advance(d)
	}
	c.Advance(time.Millisecond)
}

// Set stops the clock at t, where it stays until Set again.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = t
}

// LogBuffer collects what a logger writes from several goroutines, for a
// test to read.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
