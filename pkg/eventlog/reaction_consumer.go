package eventlog

import (
	"context"
	"errors"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/event"
)

// reactionConsumer is what a reaction consumer (React, ReactToNew) does
// with each message it is sent.
type reactionConsumer struct {
	l        *Log
	ctx      context.Context
	name     string
	how      reacting
	handlers map[string][]Handler // by event type
	log      *slog.Logger
}

// handle opens msg and hands it to the reactions to its type, or settles
// it: an event it cannot take is set aside (or, outside the log's
// planes, logged), and one a newer build's replica is to take is left
// for it.
func (c reactionConsumer) handle(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		c.log.Error("event without metadata", "subject", msg.Subject(), "err", err)
		_ = msg.Term()
		return
	}
	setAside := func(cause error) {
		if !c.how.setsAside {
			c.log.Error("event not taken, and left to the log's readers", "seq", meta.Sequence.Stream, "err", cause)
			_ = msg.Ack()
			return
		}
		if derr := c.l.setAside(c.ctx, c.name, msg.Subject(), meta.Sequence.Stream, msg.Data(), cause); derr != nil {
			c.log.Error("set aside bad event", "seq", meta.Sequence.Stream, "err", derr)
			_ = msg.NakWithDelay(backoff(meta.NumDelivered))
			return
		}
		_ = msg.Ack()
	}
	// Route by the hashed type inside the event, never by the
	// unhashed header, so that no one can steer or hide an event by
	// relabelling it.
	rec, err := c.l.open(meta.Sequence.Stream, msg.Subject(), msg.Data())
	if errors.Is(err, event.ErrUnknownType) {
		// A newer build's type, which this consumer's filter holds
		// for a newer replica (keepNewer): left for it, not handled.
		c.log.Warn("event of a type this build does not know; left to a newer build", "seq", meta.Sequence.Stream, "err", err)
		_ = msg.NakWithDelay(backoff(meta.NumDelivered))
		return
	}
	if err != nil {
		setAside(err)
		return
	}
	if c.handlers[rec.Event.Type] == nil {
		// A type this build knows and does not react to, which a
		// newer replica sharing the consumer added to its filter:
		// acknowledged here, its reaction would never run.
		c.log.Warn("event of a type only a newer build reacts to; left to it", "seq", meta.Sequence.Stream, "type", rec.Event.Type)
		_ = msg.NakWithDelay(backoff(meta.NumDelivered))
		return
	}
	c.l.deliver(c.ctx, delivery{name: c.name, handlers: c.handlers[rec.Event.Type], msg: msg, attempt: meta.NumDelivered, log: c.log, rec: rec, permanent: setAside})
}
