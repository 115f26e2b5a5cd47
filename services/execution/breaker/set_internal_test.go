package breaker

import (
	"testing"
	"time"
)

func TestSweepDropsIdleClosedBreakers(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	s := New(Config{})
	s.Record("idle", Success, t0)
	s.Record("busy", Success, t0)
	for range 5 {
		s.Record("open", Failure, t0)
	}
	s.Record("neutral-only", Neutral, t0)

	// A window later "idle" has aged out; "busy" records again and so
	// triggers the sweep.
	later := t0.Add(DefaultWindow)
	s.Record("busy", Success, later)

	tests := []struct {
		key  string
		kept bool
	}{
		{key: "idle", kept: false},
		{key: "busy", kept: true},
		{key: "open", kept: true},
		{key: "neutral-only", kept: false},
	}
	for _, tt := range tests {
		if _, kept := s.breakers[tt.key]; kept != tt.kept {
			t.Errorf("breaker %q kept = %v, want %v", tt.key, kept, tt.kept)
		}
	}
}

func TestWindowCounts(t *testing.T) {
	tests := []struct {
		name  string
		base  time.Time
		span  time.Duration
		adds  []time.Duration // failures, at base plus each
		at    time.Duration
		wantN int
	}{
		{name: "within", base: time.Unix(300, 0), span: 30 * time.Second, adds: []time.Duration{0, time.Second}, at: 2 * time.Second, wantN: 2},
		{name: "aged out", base: time.Unix(300, 0), span: 30 * time.Second, adds: []time.Duration{0, 29 * time.Second}, at: 30 * time.Second, wantN: 1},
		{name: "before the epoch", base: time.Unix(-301, 0), span: 30 * time.Second, adds: []time.Duration{0, time.Second}, at: 2 * time.Second, wantN: 2},
		{name: "tiny span", base: time.Unix(1, 0), span: 10, adds: []time.Duration{0, 5, 9}, at: 10, wantN: 2},
		{name: "many laps of the ring", base: time.Unix(1, 0), span: 10 * time.Second, adds: []time.Duration{0, 95 * time.Second}, at: 100 * time.Second, wantN: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow(tt.span)
			for _, d := range tt.adds {
				w.add(tt.base.Add(d), true)
			}
			requests, failures := w.counts(tt.base.Add(tt.at))
			if requests != tt.wantN || failures != tt.wantN {
				t.Errorf("counts = %d, %d; want %d, %d", requests, failures, tt.wantN, tt.wantN)
			}
		})
	}
}
