package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers on a dead-letter message, naming where it came from and why.
const (
	HeaderOrigSubject  = "Steward-Orig-Subject"
	HeaderOrigSequence = "Steward-Orig-Sequence"
	HeaderError        = "Steward-Error"
	// HeaderConsumer names the consumer that set the event aside (or
	// asked for, or replayed, it).
	HeaderConsumer = "Steward-Consumer"
)

// ReaderConsumer is the consumer name under which Follow's readers —
// projections and other ordered readers, which have no durable consumer
// and no reactions to replay — set aside what they cannot decode.
const ReaderConsumer = "reader"

// MaxReason bounds the reason stored with a dead letter, in bytes: an
// error may quote what it failed on, and a list of them must stay small.
const MaxReason = 1024

// The dead-letter stream holds, under its prefix (steward.deadletter):
//
//	<seq>.<consumer>                      a record: the event at stream sequence seq, set aside by consumer
//	<seq>                                 a record written before records named their consumer
//	replay.<seq>.<consumer>.<nonce>       an operator's request to replay a record
//	replayed.<seq>.<consumer>             the record was replayed: its consumer's reactions took it
//	failed.<seq>.<consumer>.<nonce>       the replay nonce asked for failed for good, and why
//
// One message per subject (the stream's MaxMsgsPerSubject), so each of
// them is written once however many readers, replicas or restarts try.
const (
	dlReplay   = "replay"
	dlReplayed = "replayed"
	dlFailed   = "failed"
)

// dlKind is what a subject on the dead-letter stream holds.
type dlKind int

const (
	dlOther dlKind = iota
	dlRecord
	dlRequest
	dlDone
	dlFailure
)

// dlSubject is a subject of the dead-letter stream, taken apart.
type dlSubject struct {
	kind     dlKind
	seq      uint64
	consumer string // "" for a record of the older shape
	nonce    string
}

// parseDeadLetter takes a dead-letter subject apart. It is the one place
// that reads both shapes of a record: steward.deadletter.<seq> (before
// records named their consumer) and steward.deadletter.<seq>.<consumer>.
func (l *Log) parseDeadLetter(subject string) dlSubject {
	rest, ok := strings.CutPrefix(subject, l.cfg.DeadLetterPrefix+".")
	if !ok {
		return dlSubject{}
	}
	t := strings.Split(rest, ".")
	seqAt := func(i int) (uint64, bool) {
		seq, err := strconv.ParseUint(t[i], 10, 64)
		return seq, err == nil && seq > 0
	}
	if seq, ok := seqAt(0); ok {
		switch len(t) {
		case 1:
			return dlSubject{kind: dlRecord, seq: seq}
		case 2:
			return dlSubject{kind: dlRecord, seq: seq, consumer: t[1]}
		}
		return dlSubject{}
	}
	kinds := map[string]struct {
		kind   dlKind
		tokens int
	}{dlReplay: {dlRequest, 4}, dlReplayed: {dlDone, 3}, dlFailed: {dlFailure, 4}}
	k, ok := kinds[t[0]]
	if !ok || len(t) != k.tokens {
		return dlSubject{}
	}
	seq, ok := seqAt(1)
	if !ok {
		return dlSubject{}
	}
	d := dlSubject{kind: k.kind, seq: seq, consumer: t[2]}
	if k.tokens == 4 {
		d.nonce = t[3]
	}
	return d
}

// recordSubject is where consumer's record of the event at seq is kept.
func (l *Log) recordSubject(seq uint64, consumer string) string {
	if unnamedConsumer(consumer) {
		return l.cfg.DeadLetterPrefix + "." + strconv.FormatUint(seq, 10)
	}
	return l.cfg.DeadLetterPrefix + "." + strconv.FormatUint(seq, 10) + "." + consumer
}

// replaySubject is a subject of a replay's part kind (dlReplay, dlReplayed,
// dlFailed) for consumer's record of seq; nonce is left out when empty, or
// is "*" for the wildcard over every request.
func (l *Log) replaySubject(kind string, seq uint64, consumer, nonce string) string {
	s := l.cfg.DeadLetterPrefix + "." + kind + "." + strconv.FormatUint(seq, 10) + "." + consumer
	if nonce != "" {
		s += "." + nonce
	}
	return s
}

// setAside copies a message that consumer cannot decode or process to the
// dead-letter stream, under a subject named for its original sequence and
// the consumer, and logs it. Every reader of the log may meet the same bad
// message, and two planes' consumers may both set one event aside: the
// subject per sequence and consumer (one message each) makes setting it
// aside idempotent across readers and restarts, and keeps each consumer's
// record.
func (l *Log) setAside(ctx context.Context, consumer, subject string, seq uint64, data []byte, cause error) error {
	l.cfg.Logger.Error("event set aside", append(logAttrs(subject, seq, cause), "consumer", consumer)...)
	return l.writeOnce(ctx, &nats.Msg{
		Subject: l.recordSubject(seq, consumer),
		Data:    data,
		Header: nats.Header{
			HeaderOrigSubject:  []string{subject},
			HeaderOrigSequence: []string{strconv.FormatUint(seq, 10)},
			HeaderConsumer:     []string{consumer},
			HeaderError:        []string{reason(cause)},
		},
	})
}

// writeOnce publishes msg to the dead-letter stream unless its subject
// holds a message already: whoever wrote first is kept.
func (l *Log) writeOnce(ctx context.Context, msg *nats.Msg) error {
	stream, err := l.js.Stream(ctx, l.cfg.DeadLetterStream)
	if err != nil {
		return err
	}
	if _, err := stream.GetLastMsgForSubject(ctx, msg.Subject); err == nil {
		return nil // written already
	}
	msg.Header.Set(jetstream.MsgIDHeader, msg.Subject)
	msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	if _, err := l.js.PublishMsg(ctx, msg); err != nil {
		if _, gerr := stream.GetLastMsgForSubject(ctx, msg.Subject); gerr == nil {
			return nil // another reader wrote it first
		}
		return fmt.Errorf("publish to dead letter: %w", err)
	}
	return nil
}

// reason is err's text, cut to MaxReason bytes on a rune boundary.
func reason(err error) string {
	s := err.Error()
	if len(s) <= MaxReason {
		return s
	}
	cut := MaxReason - len("…")
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// SetAside is a message that was moved to the dead-letter stream.
type SetAside struct {
	Subject  string
	Sequence uint64
	// Consumer set it aside; "" for a record written before records
	// named their consumer.
	Consumer string
	Reason   string
	Data     []byte
}

// DeadLetters returns every record set aside so far, oldest first, with
// the events' bytes: for tests and tools that look behind the API.
// Operators list them with ListDeadLetters.
func (l *Log) DeadLetters(ctx context.Context) ([]SetAside, error) {
	var out []SetAside
	cons, err := l.js.OrderedConsumer(ctx, l.cfg.DeadLetterStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	pending := info.NumPending
	for pending > 0 {
		batch, err := cons.Fetch(int(min(pending, 256)))
		if err != nil {
			return nil, err
		}
		for msg := range batch.Messages() {
			pending--
			d := l.parseDeadLetter(msg.Subject())
			if d.kind != dlRecord {
				continue
			}
			out = append(out, SetAside{
				Subject:  msg.Headers().Get(HeaderOrigSubject),
				Sequence: d.seq,
				Consumer: d.consumer,
				Reason:   msg.Headers().Get(HeaderError),
				Data:     msg.Data(),
			})
		}
		if batch.Error() != nil {
			return nil, batch.Error()
		}
	}
	return out, nil
}

// errNoMsg reports whether err says a subject holds no message.
func errNoMsg(err error) bool { return errors.Is(err, jetstream.ErrMsgNotFound) }
