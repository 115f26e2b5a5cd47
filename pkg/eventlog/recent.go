package eventlog

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/raceguard"
)

// recentSize is how many of the last events written or opened a Log
// keeps decoded. Its readers follow close behind its writers: in steward
// dev each event is read by the planes that react to it and by the state
// plane's projection within a few hundred events of its append.
const recentSize = 512

// recentMaxBytes is the largest event, sealed, the ring keeps: a few
// times the size of a governed action's events, so that 512 large events
// (a plan, a fork's state, up to the server's payload limit) are never
// held for their readers' sake.
const recentMaxBytes = 16 << 10

// recentEvents keeps the events this process wrote or opened last,
// decoded, by stream sequence, so that its other readers of one event
// (steward dev runs every plane's reactions and the projection over one
// Log) take it as it is instead of decoding and checking it again: an
// event this process sealed, or one it opened and checked against its
// hash and subject, is what the server stores at that sequence.
//
// A record it hands out is shared with the writer's fold and every other
// reader: none may change it (checked in race-detector builds).
type recentEvents struct {
	mu    sync.Mutex
	bySeq map[uint64]recentEvent
	order [recentSize]uint64 // a ring of the sequences kept, oldest first at next
	next  int
}

type recentEvent struct {
	subject string
	rec     *stewardv1.EventRecord
	kept    *stewardv1.EventRecord // race-detector builds: a copy, to compare with
}

// put keeps rec, stored on subject in size bytes, unless it is larger than
// recentMaxBytes.
func (r *recentEvents) put(subject string, size int, rec *stewardv1.EventRecord) {
	if size > recentMaxBytes {
		return
	}
	e := recentEvent{subject: subject, rec: rec}
	if raceguard.On {
		e.kept = proto.CloneOf(rec)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bySeq == nil {
		r.bySeq = make(map[uint64]recentEvent, recentSize)
	}
	if _, ok := r.bySeq[rec.Sequence]; ok {
		return
	}
	delete(r.bySeq, r.order[r.next])
	r.order[r.next] = rec.Sequence
	r.next = (r.next + 1) % recentSize
	r.bySeq[rec.Sequence] = e
}

// get returns the event kept for sequence seq, if it was stored on
// subject.
func (r *recentEvents) get(seq uint64, subject string) (*stewardv1.EventRecord, bool) {
	r.mu.Lock()
	e, ok := r.bySeq[seq]
	r.mu.Unlock()
	if !ok || e.subject != subject {
		return nil, false
	}
	if raceguard.On && !proto.Equal(e.rec, e.kept) {
		panic(fmt.Sprintf("eventlog: event %d (%s), shared by this process's readers, was changed by one: copy it before changing it", seq, e.rec.Event.GetType()))
	}
	return e.rec, true
}

// open decodes the event stored at seq on subject and checks it against
// its own hash and subject, or takes it from those this process wrote or
// opened last; the record is shared (recentEvents). On an error the
// record holds what decode returned (a newer build's event's envelope).
func (l *Log) open(seq uint64, subject string, data []byte) (*stewardv1.EventRecord, error) {
	if rec, ok := l.recent.get(seq, subject); ok {
		return rec, nil
	}
	ev, err := l.decode(subject, data)
	rec := &stewardv1.EventRecord{Sequence: seq, Event: ev}
	if err == nil {
		l.recent.put(subject, len(data), rec)
	}
	return rec, err
}
