package eventlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// An operator replays a record set aside (RequestReplay) through the
// dead-letter stream, not by calling the plane that set it aside: the
// planes meet only on the log. The request is a message on
// steward.deadletter.replay.<seq>.<consumer>.<nonce>; every React runs a
// durable consumer (ReplayConsumer) on its own name's requests, in
// whichever process runs that consumer, which reads the event again from
// the event stream and hands it to the same reactions, settled as any
// delivery is (deliver): on success it writes the "replayed" marker; on a
// failure for good, the new reason under the request's nonce; a passing
// failure or "not yet" comes again.

// HeaderReplayNonce names the request a replay's outcome answers.
const HeaderReplayNonce = "Steward-Replay-Nonce"

// ReplayConsumer returns the name of the durable consumer on the
// dead-letter stream that takes the replay requests of the reaction
// consumer name.
func ReplayConsumer(name string) string { return name + "_replay" }

// reactToReplays runs name's replay consumer over r's reactions.
func (l *Log) reactToReplays(ctx context.Context, name string, r map[string][]Handler, log *slog.Logger) (*puller, error) {
	durable := ReplayConsumer(name)
	cons, err := l.durable(ctx, l.cfg.DeadLetterStream, jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "Steward replays of what " + name + " set aside",
		FilterSubject: l.cfg.DeadLetterPrefix + "." + dlReplay + ".*." + name + ".*",
	})
	if err != nil {
		return nil, err
	}
	log = log.With("replay", true)
	return startPull(cons, func(msg jetstream.Msg) { l.replay(ctx, name, r, log, msg) }, l.cfg.SoleConsumer, log), nil
}

// replay hands the event a replay request names to name's reactions.
func (l *Log) replay(ctx context.Context, name string, r map[string][]Handler, log *slog.Logger, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	d := l.parseDeadLetter(msg.Subject())
	if err != nil || d.kind != dlRequest || d.consumer != name {
		log.Error("not a replay request of this consumer", "subject", msg.Subject(), "err", err)
		_ = msg.Term()
		return
	}
	retry := func(err error) {
		log.Warn("replay: will try again", "seq", d.seq, "err", err)
		_ = msg.NakWithDelay(backoff(meta.NumDelivered))
	}
	failed := func(cause error) {
		if err := l.writeOnce(ctx, l.outcome(dlFailed, d, cause)); err != nil {
			retry(err)
			return
		}
		log.Warn("replay failed", "seq", d.seq, "nonce", d.nonce, "err", cause)
		_ = msg.Ack()
	}
	dl, err := l.js.Stream(ctx, l.cfg.DeadLetterStream)
	if err != nil {
		retry(err)
		return
	}
	if _, err := dl.GetLastMsgForSubject(ctx, l.replaySubject(dlReplayed, d.seq, name, "")); err == nil {
		_ = msg.Ack() // replayed already: the reactions took the event
		return
	} else if !errNoMsg(err) {
		retry(err)
		return
	}
	record, err := dl.GetLastMsgForSubject(ctx, l.recordSubject(d.seq, name))
	if err != nil {
		if errNoMsg(err) {
			failed(errs.New(errs.NotFound, "%s set no event at %d aside", name, d.seq))
			return
		}
		retry(err)
		return
	}
	orig, err := l.at(ctx, d.seq) // a follower's miss is asked of the leader
	switch {
	case errNoMsg(err):
		failed(errs.New(errs.NotFound, "the event stream has no message at %d", d.seq))
		return
	case err != nil:
		retry(err)
		return
	case orig.subject != record.Header.Get(HeaderOrigSubject):
		failed(errs.New(errs.Corrupt, "the message at %d is on %s, the record says %s", d.seq, orig.subject, record.Header.Get(HeaderOrigSubject)))
		return
	}
	ev, err := l.decode(orig.subject, orig.data)
	if err != nil {
		failed(errs.Wrap(errs.Corrupt, err, "decode"))
		return
	}
	l.deliver(ctx, delivery{name: name, handlers: r[ev.Type], msg: msg, attempt: meta.NumDelivered, log: log,
		rec:       &stewardv1.EventRecord{Sequence: d.seq, Event: ev},
		done:      func() error { return l.writeOnce(ctx, l.outcome(dlReplayed, d, nil)) },
		permanent: failed})
}

// outcome is the message that says how the replay d asked for ended:
// replayed (the marker, one per record), or failed with cause.
func (l *Log) outcome(kind string, d dlSubject, cause error) *nats.Msg {
	nonce := d.nonce
	if kind == dlReplayed {
		nonce = ""
	}
	m := &nats.Msg{Subject: l.replaySubject(kind, d.seq, d.consumer, nonce), Header: nats.Header{
		HeaderConsumer:     []string{d.consumer},
		HeaderOrigSequence: []string{strconv.FormatUint(d.seq, 10)},
		HeaderReplayNonce:  []string{d.nonce},
	}}
	if cause != nil {
		m.Header.Set(HeaderError, reason(cause))
	}
	return m
}

// RequestReplay asks consumer to take the event at stream sequence seq
// again, which it set aside, and returns the request's nonce: the
// consumer's process replays it soon after, and ListDeadLetters shows how
// it went. A record that does not exist is NotFound; one that cannot be
// replayed — set aside by a reader (ReaderConsumer), which has no
// reactions, or written before records named their consumer — or that was
// replayed already, FailedPrecondition. Asking again while a replay is
// under way is allowed and harmless: the consumer skips a request for a
// record replayed already, and reactions are idempotent.
func (l *Log) RequestReplay(ctx context.Context, seq uint64, consumer string) (string, error) {
	if seq == 0 {
		return "", errs.Field("sequence", "is required")
	}
	if consumer != "" && !ValidTaskID(consumer) {
		return "", errs.Field("consumer", "%s is not a consumer name: want 1-64 letters, digits, '-' or '_'", errs.Quote(consumer))
	}
	dl, err := l.js.Stream(ctx, l.cfg.DeadLetterStream)
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "dead letters")
	}
	has := func(subject string) (bool, error) {
		_, err := dl.GetLastMsgForSubject(ctx, subject)
		if errNoMsg(err) {
			return false, nil
		}
		if err != nil {
			return false, errs.Wrap(errs.Unavailable, err, "dead letters")
		}
		return true, nil
	}
	found, err := has(l.recordSubject(seq, consumer))
	switch {
	case err != nil:
		return "", err
	case !found:
		return "", errs.New(errs.NotFound, "no event at sequence %d was set aside by %s", seq, consumerName(consumer))
	case unnamedConsumer(consumer):
		return "", errs.New(errs.FailedPrecondition, "the event at sequence %d was set aside before records named their consumer: there is no consumer to hand it to", seq)
	case consumer == ReaderConsumer:
		return "", errs.New(errs.FailedPrecondition, "the event at sequence %d was set aside by a reader, which has no reactions to replay it to", seq)
	}
	if done, err := has(l.replaySubject(dlReplayed, seq, consumer, "")); err != nil {
		return "", err
	} else if done {
		return "", errs.New(errs.FailedPrecondition, "the event at sequence %d was replayed to %s already", seq, consumer)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	subject := l.replaySubject(dlReplay, seq, consumer, nonce)
	_, err = l.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: nats.Header{
		jetstream.MsgIDHeader: []string{subject},
		HeaderConsumer:        []string{consumer},
		HeaderOrigSequence:    []string{strconv.FormatUint(seq, 10)},
	}})
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "request replay")
	}
	return nonce, nil
}
