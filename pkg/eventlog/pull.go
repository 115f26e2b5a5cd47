package eventlog

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A reaction consumer pulls its events in fetches of its own rather than
// through jetstream's Consume, so that a stop leaves nothing in flight.
// Consume keeps a pull request open at the server at all times; stopping
// it unsubscribes the inbox while the server may still hold that request,
// and on a cluster the consumer's leader — often another node, which
// learns of the lost interest only later — can send one more event to an
// inbox no one reads. Such an event counts as delivered and waits out
// ReactionAckWait before another replica has it: a pause of 5 s after a
// SIGTERM. A fetch ends at the server (its batch full, or its expiry
// answered with a timeout status), and a puller that stops asks for no
// more and waits for the fetch in flight to end: by then the server holds
// no request of this process, and what arrived was handed on. Only where
// this process is the consumer's sole reader (Config.SoleConsumer: steward
// dev, whose successor resets the consumer to its ack floor; a test's
// planes) does a stop cut the fetch at once: nobody else could take what
// it holds. A process with peers waits, even on a single server: a cut can
// drop events (nats.go's fetch, told to stop while events wait in its
// buffer, unsubscribes with them unread; CI saw a hand-back 5 s late).

// ReactionPull is how long one fetch of a reaction consumer waits for
// events. It bounds how long a stop waits for the fetch in flight, and how
// soon reactions resume after the consumer's leader is lost with its node
// (a fetch with no answer ends when it expires, and the next goes to the
// new leader). An idle consumer costs
// one small request per ReactionPull.
const ReactionPull = 500 * time.Millisecond

// reactionBatch is how many events one fetch asks for: as many as the
// lanes queue at once, so a fetch is rarely cut short by a full lane.
const reactionBatch = 64

// puller fetches a consumer's messages and hands each to route, in order,
// until stop.
type puller struct {
	// fetching ends every fetch at once when cancelled (cut).
	fetching context.Context
	cut      context.CancelFunc
	// cutOnStop: a stop cancels the fetch in flight rather than waiting
	// for it to end — where this process is the consumer's sole reader.
	cutOnStop bool
	stopping  chan struct{}
	once      sync.Once
	done      chan struct{}
}

// startPull starts fetching cons for route. sole says whether this process
// is the consumer's only reader, whose stop need not wait for the fetch in
// flight.
func startPull(cons jetstream.Consumer, route func(jetstream.Msg), sole bool, log *slog.Logger) *puller {
	p := &puller{cutOnStop: sole, stopping: make(chan struct{}), done: make(chan struct{})}
	p.fetching, p.cut = context.WithCancel(context.Background())
	go func() {
		defer close(p.done)
		for !p.stopped() {
			err := p.fetch(cons, route)
			switch {
			case err == nil, errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
				continue
			case errors.Is(err, nats.ErrConnectionClosed):
				return
			}
			// A lost consumer leader, a deleted consumer, a reconnect: ask
			// again after a while rather than spin.
			log.Debug("reaction fetch failed; will fetch again", "err", err)
			select {
			case <-p.stopping:
			case <-time.After(ReactionPull):
			}
		}
	}()
	return p
}

// fetch asks for one batch, for ReactionPull at most, and hands on what
// comes.
func (p *puller) fetch(cons jetstream.Consumer, route func(jetstream.Msg)) error {
	ctx, cancel := context.WithTimeout(p.fetching, ReactionPull)
	defer cancel()
	batch, err := cons.Fetch(reactionBatch, jetstream.FetchContext(ctx))
	if err != nil {
		return err
	}
	for msg := range batch.Messages() {
		route(msg)
	}
	return batch.Error()
}

func (p *puller) stopped() bool {
	select {
	case <-p.stopping:
		return true
	default:
		return false
	}
}

// stop asks for no more and returns once the fetch in flight has ended
// (or is cut: cutOnStop) and its messages are handed on.
func (p *puller) stop() {
	p.once.Do(func() {
		close(p.stopping)
		if p.cutOnStop {
			p.cut()
		}
	})
	<-p.done
	p.cut()
}
