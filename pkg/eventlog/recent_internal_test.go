package eventlog

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/raceguard"
)

// TestRecentEventsKeepTheLast: the ring keeps the last recentSize
// events, answers only for the subject an event was stored on, and keeps
// the first record of a sequence, and none larger than recentMaxBytes.
func TestRecentEventsKeepTheLast(t *testing.T) {
	var r recentEvents
	for seq := uint64(1); seq <= recentSize+10; seq++ {
		r.put("s", 100, &stewardv1.EventRecord{Sequence: seq, Event: &stewardv1.Event{EventId: "e"}})
	}
	if _, ok := r.get(10, "s"); ok {
		t.Fatal("sequence 10 is kept past the ring's size")
	}
	if _, ok := r.get(11, "s"); !ok {
		t.Fatal("sequence 11, within the last recentSize, is not kept")
	}
	if _, ok := r.get(11, "other"); ok {
		t.Fatal("a read of another subject took the event")
	}
	first, _ := r.get(recentSize+10, "s")
	r.put("s", 100, &stewardv1.EventRecord{Sequence: recentSize + 10, Event: &stewardv1.Event{EventId: "again"}})
	if again, _ := r.get(recentSize+10, "s"); again != first || len(r.bySeq) != recentSize {
		t.Fatalf("a second put of a sequence replaced it (%v) or grew the ring to %d", again != first, len(r.bySeq))
	}
	r.put("s", recentMaxBytes+1, &stewardv1.EventRecord{Sequence: 1 << 40, Event: &stewardv1.Event{EventId: "large"}})
	if _, ok := r.get(1<<40, "s"); ok {
		t.Fatal("an event larger than recentMaxBytes is kept")
	}
}

// TestAChangedSharedEventPanics: in race-detector builds (the tests), a
// reader that changes an event it shares is caught at the next read.
func TestAChangedSharedEventPanics(t *testing.T) {
	var r recentEvents
	rec := &stewardv1.EventRecord{Sequence: 1, Event: &stewardv1.Event{EventId: "e", Type: "task.created"}}
	r.put("s", 100, rec)
	rec.Sequence = 2 // the record's own fields count too
	defer func() {
		if caught := recover() != nil; caught != raceguard.On {
			t.Fatalf("caught %v, want %v (race build: %v)", caught, raceguard.On, raceguard.On)
		}
	}()
	r.get(1, "s")
}
