package eventlog

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/tracing"
)

// Head is the tip of a task's chain: the stream sequence and hash of its
// last event. The zero Head is the position before a task's first event.
type Head struct {
	Sequence uint64
	Hash     []byte
}

// HeadOf returns the head of a folded task.
func HeadOf(t *stewardv1.Task) Head {
	return Head{Sequence: t.GetLastSequence(), Hash: t.GetLastHash()}
}

// ErrConflict means the task moved on since head was read: another writer
// appended first. Re-read, re-fold, re-check and retry.
var ErrConflict = errs.New(errs.Conflict, "task changed since it was read; re-read and retry")

// JetStream error codes Append interprets.
const (
	// A failed Nats-Expected-Last-Subject-Sequence check (single server).
	jsErrWrongLastSequence = 10071
	// The same, from a clustered stream while another message on the
	// subject is still being proposed: it carries no sequence.
	jsErrWrongLastSequenceConstant = 10164
	// A message with this id is still being proposed (clustered).
	jsErrDuplicateInProcess = 10158
)

// Fits refuses ev, as Append would, if it is larger sealed than the log
// takes: for a command to find out before it does what it cannot undo.
// ctx is the one ev will be appended under: its trace context, which
// Append writes onto the event, counts too.
func (l *Log) Fits(ctx context.Context, ev *stewardv1.Event) error {
	sized := proto.CloneOf(ev)
	tracing.Into(ctx, sized)
	data, err := event.Seal(sized, make([]byte, sha256.Size)) // a chain's previous hash
	if err != nil {
		return err
	}
	if len(data) > l.maxPayload {
		return errs.New(errs.TooLarge, "the %s event is %d bytes; the event log takes at most %d", ev.Type, len(data), l.maxPayload)
	}
	return nil
}

// Append seals ev onto head (setting ev.PrevHash and ev.Hash) and stores it,
// provided the task's last sequence is still head.Sequence. It returns the
// stored record. If an event with the same id is already stored — a retried
// append — it returns that record instead of storing a second one. Once
// stored, ev and every message it holds are the log's, shared with the
// process's readers: the caller must not change them (a request's part
// an event holds included).
func (l *Log) Append(ctx context.Context, head Head, ev *stewardv1.Event) (*stewardv1.EventRecord, error) {
	rec, chain, err := l.appendOn(ctx, head, ev)
	if errors.Is(err, errWrongHead) {
		// The server checks the sequence before the message id, so a retry
		// of an append that was stored lands here too: maybe stored.
		if rec, ferr := l.find(ctx, chain, head.Sequence, ev.EventId); ferr != nil || rec != nil {
			return rec, ferr
		}
		return nil, ErrConflict
	}
	return rec, err
}

// TryAppend is Append for a writer that reads its chain again when it
// loses, as the task store's first try on the fold it keeps does: an
// append refused because head is not the chain's last is ErrConflict at
// once, without the read that tells Append's caller whether the event
// was stored before, which the writer's next read shows (its history).
// (A replicated stream checks the message id first: there a retry of an
// event stored before returns that record, as Append does.)
func (l *Log) TryAppend(ctx context.Context, head Head, ev *stewardv1.Event) (*stewardv1.EventRecord, error) {
	rec, _, err := l.appendOn(ctx, head, ev)
	if errors.Is(err, errWrongHead) {
		return nil, ErrConflict
	}
	return rec, err
}

// errWrongHead is appendOn's refusal of an event whose head is not its
// chain's last (Append and TryAppend each say what that means).
var errWrongHead = errors.New("eventlog: not the chain's head")

// appendOn seals ev onto head and stores it, on the condition that head
// is its chain's last, and returns the record stored (the one before, for
// a duplicate message id) and the chain's subject (a wildcard).
func (l *Log) appendOn(ctx context.Context, head Head, ev *stewardv1.Event) (*stewardv1.EventRecord, string, error) {
	subject, chain, err := l.subjectOf(ev)
	if err != nil {
		return nil, "", err
	}
	tracing.Into(ctx, ev) // before the seal: the context is hashed with the event
	data, err := event.Seal(ev, head.Hash)
	if err != nil {
		return nil, "", err
	}
	if len(data) > l.maxPayload {
		return nil, "", errs.New(errs.TooLarge, "the %s event is %d bytes; the event log takes at most %d", ev.Type, len(data), l.maxPayload)
	}
	msg := &nats.Msg{
		Subject: subject,
		Data:    data,
		Header: nats.Header{
			jetstream.MsgIDHeader: []string{ev.EventId},
			// The chain's last sequence across all its type subjects.
			jetstream.ExpectedLastSubjSeqHeader:     []string{strconv.FormatUint(head.Sequence, 10)},
			jetstream.ExpectedLastSubjSeqSubjHeader: []string{chain},
			HeaderType:                              []string{ev.Type},
		},
	}
	// The payload's type, which named the subject, names the writer.
	ack, err := l.writer(event.TypeOf(ev)).PublishMsg(ctx, msg)
	var apiErr *jetstream.APIError
	switch {
	case err == nil && ack.Duplicate:
		rec, err := l.duplicateOf(ctx, ev, ack.Sequence)
		return rec, chain, err
	case err == nil:
		rec := &stewardv1.EventRecord{Sequence: ack.Sequence, Event: ev}
		l.recent.put(subject, len(data), rec)
		return rec, chain, nil
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrWrongLastSequence || apiErr.ErrorCode == jsErrWrongLastSequenceConstant):
		return nil, chain, errWrongHead
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrDuplicateInProcess:
		return nil, chain, ErrConflict // the same event is being stored; re-read and see
	default:
		return nil, chain, errs.Wrap(errs.Unavailable, err, "append %s to %s", ev.Type, subject)
	}
}

// writer returns the connection events of type typ are published on.
func (l *Log) writer(typ string) jetstream.JetStream {
	if js, ok := l.cfg.Writers[event.Owner(typ)]; ok {
		return js
	}
	return l.js
}

// find returns the event with id eventID stored on chain (a wildcard)
// after sequence after, or nil if there is none.
func (l *Log) find(ctx context.Context, chain string, after uint64, eventID string) (*stewardv1.EventRecord, error) {
	var found *stewardv1.EventRecord
	err := l.scan(ctx, chain, after+1, func(seq uint64, subject string, data []byte) error {
		ev, err := l.decode(subject, data)
		if err == nil && ev.EventId == eventID {
			found = &stewardv1.EventRecord{Sequence: seq, Event: ev}
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	return found, nil
}

// duplicateOf returns the stored event that the server says ev duplicates,
// after checking that it is the same event: same task and id. Anything else
// is an id collision, which must not pass for success.
func (l *Log) duplicateOf(ctx context.Context, ev *stewardv1.Event, seq uint64) (*stewardv1.EventRecord, error) {
	rec, err := l.recordAt(ctx, seq)
	if err != nil {
		return nil, err
	}
	if rec.Event.TaskId != ev.TaskId || rec.Event.EventId != ev.EventId || rec.Event.Type != ev.Type {
		return nil, errs.New(errs.Internal, "event id %s collides with event %d of task %s", ev.EventId, seq, rec.Event.TaskId)
	}
	return rec, nil
}

// recordAt reads the event stored at seq.
func (l *Log) recordAt(ctx context.Context, seq uint64) (*stewardv1.EventRecord, error) {
	raw, err := l.at(ctx, seq)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "read event %d", seq)
	}
	ev, err := l.decode(raw.subject, raw.data)
	if err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "read event %d", seq)
	}
	return &stewardv1.EventRecord{Sequence: seq, Event: ev}, nil
}

var errStop = errors.New("stop")

// String helps error messages name a head.
func (h Head) String() string { return fmt.Sprintf("seq %d", h.Sequence) }
