package eventlog

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/leader"
)

// Reads of the event stream that a plane decides on (DESIGN, rule 9).
//
// Most reads are direct gets, which any replica answers, and on a
// replicated stream a follower may not yet have applied an append the
// leader has acknowledged. Two reads then take the leader's word
// (pkg/leader): the last message on a chain, which says how far a read must
// go, and any miss before that point, which can only be a follower behind.
// A walk a follower answers in full costs nothing more; a single server,
// whose one replica is its leader, reads directly throughout.

// stored is one message as a read returns it.
type stored struct {
	seq     uint64
	subject string
	data    []byte
}

// last returns the last message on filter, or ErrMsgNotFound.
func (l *Log) last(ctx context.Context, filter string) (stored, error) {
	if l.replicated {
		m, err := leader.Last(ctx, l.js, l.cfg.Stream, filter)
		if err != nil {
			return stored{}, err
		}
		return stored{m.Sequence, m.Subject, m.Data}, nil
	}
	m, err := l.stream.GetLastMsgForSubject(ctx, filter)
	if err != nil {
		return stored{}, err
	}
	return stored{m.Sequence, m.Subject, m.Data}, nil
}

// next returns the first message on subject at or after sequence from, or
// ErrMsgNotFound. The caller knows a message is there (it read the last
// one first), so a follower's miss is asked of the leader.
func (l *Log) next(ctx context.Context, from uint64, subject string) (stored, error) {
	m, err := l.stream.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subject))
	return l.orLeader(m, err, func() (*leader.Msg, error) { return leader.Next(ctx, l.js, l.cfg.Stream, from, subject) })
}

// at returns the message stored at seq, which the server has said is
// there: a follower's miss is asked of the leader.
func (l *Log) at(ctx context.Context, seq uint64) (stored, error) {
	m, err := l.stream.GetMsg(ctx, seq)
	return l.orLeader(m, err, func() (*leader.Msg, error) { return leader.At(ctx, l.js, l.cfg.Stream, seq) })
}

// orLeader is a direct get's answer, m or err, unless it is a miss on a
// replicated stream: then it is the leader's (ask).
func (l *Log) orLeader(m *jetstream.RawStreamMsg, err error, ask func() (*leader.Msg, error)) (stored, error) {
	if err == nil {
		return stored{m.Sequence, m.Subject, m.Data}, nil
	}
	if !l.replicated || !leader.IsNotFound(err) {
		return stored{}, err
	}
	lm, err := ask()
	if err != nil {
		return stored{}, err
	}
	return stored{lm.Sequence, lm.Subject, lm.Data}, nil
}

// floorKey carries, in a reaction's context, the event it handles.
type floorKey struct{}

type floor struct {
	taskID string
	seq    uint64
	rec    *stewardv1.EventRecord // the event itself, under a reaction
}

// WithReadFloor marks ctx as a reader that must see taskID up to stream
// sequence seq: React does so for the event each reaction handles, and a
// caller that holds an acknowledgement may do so for what it appended.
func WithReadFloor(ctx context.Context, taskID string, seq uint64) context.Context {
	return context.WithValue(ctx, floorKey{}, floor{taskID: taskID, seq: seq})
}

// WithHandled is WithReadFloor for a reaction to rec, which it also
// carries (Handled): React does so for each reaction.
func WithHandled(ctx context.Context, rec *stewardv1.EventRecord) context.Context {
	return context.WithValue(ctx, floorKey{}, floor{taskID: rec.Event.TaskId, seq: rec.Sequence, rec: rec})
}

// Handled returns the event of taskID at stream sequence seq that the
// reaction under ctx handles, as delivered and checked against its own
// hash; nil if ctx is not a reaction to that event. A reader whose fold
// stands on the event's prev_hash may fold it without reading the log:
// the chain takes one event on a head, so it is the very next one. It is
// the reaction's too: a reader copies what it keeps.
func Handled(ctx context.Context, taskID string, seq uint64) *stewardv1.EventRecord {
	if f, ok := ctx.Value(floorKey{}).(floor); ok && f.rec != nil && f.taskID == taskID && f.seq == seq {
		return f.rec
	}
	return nil
}

// ReadFloor returns the stream sequence that a read of taskID under ctx
// must reach (WithReadFloor): under a reaction, that of the event it
// handles when the event is taskID's; 0 when nothing says. A read that falls short of
// it was answered from behind the event (a replica not yet caught up, a
// leader just elected): what it lacks is not yet visible, not absent, so
// the reader says "not yet" (errs.Later) instead of deciding on it.
func ReadFloor(ctx context.Context, taskID string) uint64 {
	if f, ok := ctx.Value(floorKey{}).(floor); ok && f.taskID == taskID {
		return f.seq
	}
	return 0
}
