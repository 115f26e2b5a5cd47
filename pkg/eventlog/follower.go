package eventlog

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// errFollowAgain marks the ends of a follow that following anew, at
// once, from where its reader got to cures (keepFollowing): its consumer
// lost (no heartbeat), a delivery lost, the client reconnected.
var errFollowAgain = errors.New("following the log anew")

// follow reads filters from stream sequence after+1 on through one
// consumer of its own until ctx ends, fn fails, or the consumer does: its
// caller (keepFollowing) follows anew from where its reader got to.
//
// It is jetstream's ordered consumer written out, because that one, once
// its consumer went with a lost node, made the next one outside any
// context: each try waited up to 10 s for a meta leader, then backed off
// to 10 s between tries, for ever, and Stop reached none of it. On a
// three-node cluster a follower so stood behind the log for more than 20 s
// after its node's leader was killed (TestFollowersAfterTheStreamLeadersNodeIsLost,
// in CI). Here every step answers ctx, a try is bounded by followCreate,
// and a missed heartbeat, a lost delivery or a reconnect ends the follow.
func (l *Log) follow(ctx context.Context, filters []string, after uint64, fn func(*stewardv1.EventRecord) error, bad func(seq uint64, err error)) error {
	cons, err := l.followConsumer(ctx, filters, after)
	if err != nil {
		return err
	}
	// Listening before the first pull: a reconnect after it may lose what
	// the server sent meanwhile, and nothing acknowledged means nothing
	// is sent again.
	nc := l.js.Conn()
	reconnecting := nc.StatusChanged(nats.RECONNECTING)
	defer nc.RemoveStatusListener(reconnecting)
	// Each pull is bounded in bytes as well as in messages, so a reader
	// catching up on large events (plans of up to a message each) buffers
	// a few MiB, not hundreds of them.
	it, err := cons.Messages(jetstream.PullMaxMessagesWithBytesLimit(followBufferMessages, l.pullBytes()),
		jetstream.PullHeartbeat(followHeartbeat), jetstream.WithMessagesErrOnMissingHeartbeat(true))
	if err != nil {
		return err
	}
	defer it.Stop()
	f := &follower{log: l, cons: cons, fn: fn, bad: bad}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	go func() {
		if _, ok := <-reconnecting; ok {
			f.reconnected.Store(true)
			it.Stop()
		}
	}()
	for {
		msg, err := it.Next(jetstream.NextMaxWait(followIdle))
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case f.reconnected.Load():
			return fmt.Errorf("%w: the client reconnected; what was on its way may be lost", errFollowAgain)
		case errors.Is(err, nats.ErrTimeout):
			err = f.deliveredAll(ctx)
		case errors.Is(err, jetstream.ErrNoHeartbeat):
			err = fmt.Errorf("%w: %w", errFollowAgain, err)
		case err == nil:
			err = f.take(ctx, msg)
		}
		if err != nil {
			return err
		}
	}
}

// follower is one follow's reading of its consumer.
type follower struct {
	log  *Log
	cons jetstream.Consumer
	fn   func(*stewardv1.EventRecord) error
	bad  func(seq uint64, err error)
	// delivered is the consumer's sequence of the last message taken.
	delivered   uint64
	reconnected atomic.Bool
}

// take hands msg on, unless one before it was lost: nothing is
// acknowledged, so nothing is sent again, and only following anew from
// the last one applied gets it.
func (f *follower) take(ctx context.Context, msg jetstream.Msg) error {
	meta, err := msg.Metadata()
	if err != nil {
		return err
	}
	if meta.Sequence.Consumer != f.delivered+1 {
		return fmt.Errorf("%w: delivery %d came after %d; one was lost on its way", errFollowAgain, meta.Sequence.Consumer, f.delivered)
	}
	f.delivered = meta.Sequence.Consumer
	return f.log.hand(ctx, msg.Subject(), meta.Sequence.Stream, msg.Data(), f.fn, f.bad)
}

// deliveredAll checks, when nothing came for followIdle, that nothing was
// lost on its way either: a last delivery lost has no next one to show
// the gap, and heartbeats go on.
func (f *follower) deliveredAll(ctx context.Context) error {
	ictx, cancel := context.WithTimeout(ctx, followCreate)
	defer cancel()
	info, err := f.cons.Info(ictx)
	if err != nil {
		return err
	}
	if info.Delivered.Consumer > f.delivered {
		return fmt.Errorf("%w: the server delivered %d, %d came", errFollowAgain, info.Delivered.Consumer, f.delivered)
	}
	return nil
}

// hand decodes one followed event and hands it to fn (open: the record
// is shared, read-only); one that cannot be decoded is set aside and
// reported to bad, if set.
func (l *Log) hand(ctx context.Context, subject string, seq uint64, data []byte, fn func(*stewardv1.EventRecord) error, bad func(seq uint64, err error)) error {
	rec, err := l.open(seq, subject, data)
	ev := rec.Event
	if errors.Is(err, event.ErrUnknownType) {
		// A newer build's: nothing to set aside. The reader goes past it,
		// and a newer reader, which folds anew (a snapshot of another
		// build is refused), reads it.
		l.cfg.Logger.Warn("event of a type this build does not know; left to a newer build", "seq", seq, "task", ev.TaskId, "err", err)
		if bad != nil {
			bad(seq, &NewerEvent{TaskID: ev.TaskId, Sequence: seq, Type: ev.Type})
		}
		return nil
	}
	if err != nil {
		if derr := l.setAside(ctx, ReaderConsumer, subject, seq, data, err); derr != nil {
			l.cfg.Logger.Error("set aside bad event", "seq", seq, "err", derr)
		}
		if bad != nil {
			bad(seq, err)
		}
		return nil
	}
	return fn(rec)
}

// followConsumer makes a follow's consumer: in memory, on one replica,
// acknowledging nothing, its name its own.
func (l *Log) followConsumer(ctx context.Context, filters []string, after uint64) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Name:              nuid.Next(),
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		FilterSubjects:    filters,
		InactiveThreshold: followInactive,
		Replicas:          1,
		MemoryStorage:     true,
	}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cctx, cancel := context.WithTimeout(ctx, followCreate)
	defer cancel()
	return l.js.CreateConsumer(cctx, l.cfg.Stream, cfg)
}

// followCreate bounds one try at making a follow's consumer, or asking
// after it: a cluster without a meta leader answers none, and the next
// try, a second later (keepFollowing), may find one.
const followCreate = 5 * time.Second

// followIdle is how long a follow waits for a delivery before it asks
// the server whether one was lost (follower.deliveredAll).
const followIdle = 5 * time.Second

// followInactive is how long the server keeps a follow's consumer once
// nobody pulls from it: the follow that made it has ended. Planes may not
// delete consumers (natsperm's refusedAPI), so none tries.
const followInactive = time.Minute
