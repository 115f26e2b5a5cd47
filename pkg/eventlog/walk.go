package eventlog

import (
	"bytes"
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// scan calls fn for each event stored on subject (a wildcard) from stream
// sequence from on, in order, until fn returns an error. The subject's
// last message, the leader's word (consistent.go), is read first and
// handed on as read; each step before it is one direct get of the next
// message on the subject, answered by any replica.
//
// The walk stops at the subject's last message, read first: asking for
// one more would have the server look through every later message of the
// stream for none, one by one, since a wildcard over one task's subjects
// is not what its index skips with once a stream holds many subjects.
// Events appended during the walk are left for the next read.
func (l *Log) scan(ctx context.Context, subject string, from uint64, fn func(seq uint64, subject string, data []byte) error) error {
	last, ok, err := l.lastFrom(ctx, subject, from)
	if !ok {
		return err
	}
	// The last message is in hand: most reads of what is new find one
	// event, and need no second trip for it.
	each := func(seq uint64, subject string, data []byte) (bool, error) { return false, fn(seq, subject, data) }
	if err := l.walk(ctx, subject, from, last.seq, each); err != nil {
		return err
	}
	return fn(last.seq, last.subject, last.data)
}

// walk calls fn for each message on subject from sequence from on, up to
// and not including sequence to, which the caller knows holds one: each
// step one direct get of the next message on the subject. fn says when
// the message it was handed is the last before to (reached), which spares
// the get that would only find to again.
func (l *Log) walk(ctx context.Context, subject string, from, to uint64, fn func(seq uint64, subject string, data []byte) (reached bool, err error)) error {
	for from < to {
		msg, err := l.next(ctx, from, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && msg.seq >= to {
			return nil
		}
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "read %s", subject)
		}
		reached, err := fn(msg.seq, msg.subject, msg.data)
		if err != nil || reached {
			return err
		}
		from = msg.seq + 1
	}
	return nil
}

// lastFrom is the subject's last message, and whether it is at sequence
// from or later (when it is not, or there is none, err says why not, or
// is nil).
func (l *Log) lastFrom(ctx context.Context, subject string, from uint64) (stored, bool, error) {
	last, err := l.last(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return stored{}, false, nil
	}
	if err != nil {
		return stored{}, false, errs.Wrap(errs.Unavailable, err, "read %s", subject)
	}
	return last, from <= last.seq, nil
}

// walkBack hands fn each event on subject from sequence from up to (not
// including) held, decoded and checked against its own hash and subject,
// and stops at the one held names as its predecessor (prev_hash, as the
// decoder reads it): a chain has no other event before held.
func (l *Log) walkBack(ctx context.Context, subject string, from uint64, held *stewardv1.EventRecord, fn func(*stewardv1.EventRecord) error) error {
	prev := held.GetEvent().GetPrevHash()
	return l.walk(ctx, subject, from, held.Sequence, func(seq uint64, subject string, data []byte) (bool, error) {
		rec, err := l.record(seq, subject, data)
		if err != nil {
			return false, err
		}
		return len(prev) > 0 && bytes.Equal(rec.Event.GetHash(), prev), fn(rec)
	})
}

// eachOn calls fn with each event of the chain subject (a wildcard)
// stored after sequence after, decoded and checked against its own hash
// and subject. It follows the chain back from its last event: the walk
// stops at the event the last names as its predecessor, and spares the
// get that would only find the last again. A reader folding what is new
// links what it is handed (a fold refuses a break); a reader checking the
// whole chain reads every message on the subject (scan). So a fork (two
// events on one head, which only an append without the chain's condition
// can store) is reported by Read and the audit, and folded here as the
// branch the last event is on.
func (l *Log) eachOn(ctx context.Context, subject string, after uint64, fn func(*stewardv1.EventRecord) error) error {
	last, ok, err := l.lastFrom(ctx, subject, after+1)
	if !ok {
		return err
	}
	// Opened first, for the predecessor it names as the decoder reads it
	// (the last of its prev_hash fields), which is what a fold links.
	held, err := l.record(last.seq, last.subject, last.data)
	if err != nil {
		return err
	}
	if err := l.walkBack(ctx, subject, after+1, held, fn); err != nil {
		return err
	}
	return fn(held)
}
