package eventlog

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Handler reacts to one event. Returning nil acknowledges the event;
// returning an error asks for redelivery after a backoff (errs.Later:
// after the time it names), so a handler must be idempotent: seeing the
// same event twice appends nothing twice. It must not change rec, which
// its writer and other readers in this process share (recent.go).
type Handler func(ctx context.Context, rec *stewardv1.EventRecord) error

// Reaction is a handler of the events of one type: see On and OnRecord.
type Reaction struct {
	typ    string
	handle Handler
}

// Type is the type of the events r reacts to.
func (r Reaction) Type() string { return r.typ }

// On reacts to the events whose payload is P. P's type is the consumer's
// filter subject, and fn gets the payload itself: a handler cannot be
// registered under one type and read another's.
func On[P event.Payload](fn func(ctx context.Context, rec *stewardv1.EventRecord, p P) error) Reaction {
	return Reaction{typ: typeFor[P](), handle: func(ctx context.Context, rec *stewardv1.EventRecord) error {
		p, ok := event.PayloadOf[P](rec.Event)
		if !ok {
			return errs.New(errs.Internal, "a %s event came to the reaction to %s", rec.Event.Type, event.TypeFor[P]())
		}
		return fn(ctx, rec, p)
	}}
}

// OnRecord is On for a handler that reads the record itself, such as one
// shared by several types.
func OnRecord[P event.Payload](fn Handler) Reaction { return Reaction{typ: typeFor[P](), handle: fn} }

func typeFor[P event.Payload]() string {
	typ := event.TypeFor[P]()
	if typ == "" {
		var zero P
		panic(fmt.Sprintf("eventlog: %T is not an event payload", zero))
	}
	return typ
}

// Subscription is a running consumer. Stop it when done.
type Subscription interface{ Stop() }

// React runs a durable consumer named name over the task events of the
// types r has handlers for — its filter is one subject per type, so the
// server sends nothing else — and hands each event to its handler. The
// consumer survives restarts: a plane picks up where it left off. An
// event that cannot be decoded or fails its hash check is set aside on the
// dead-letter stream and acknowledged, so it never blocks the consumer. So
// is an event whose handler fails for good (invalid, not found, failed
// precondition, corrupt: see Permanent); any other is retried with backoff.
//
// Several reactions to one type run in the order given; the first to fail
// stops the rest, and the event comes again for all of them (each is
// idempotent).
func (l *Log) React(ctx context.Context, name string, reactions ...Reaction) (Subscription, error) {
	return l.react(ctx, name, planeReactions, reactions)
}

// ReactToNew is React for a consumer that acts outside the log (a
// notification sink's): it takes only the events appended after it was
// first made — those before are none of its business: a sink added today
// is not told of last year's approvals — and once made goes on from where
// it left off. What it cannot take it does not set aside: it logs it and
// goes on, for the log's readers set aside every event they cannot decode
// (under ReaderConsumer) and nothing of the log is its to keep; so it
// needs no dead-letter subject of its own, which a name chosen at run time
// could not be granted (pkg/natsperm).
func (l *Log) ReactToNew(ctx context.Context, name string, reactions ...Reaction) (Subscription, error) {
	return l.react(ctx, name, outsideReactions, reactions)
}

// reacting is how a reaction consumer starts, and where what it cannot
// take goes.
type reacting struct {
	from jetstream.DeliverPolicy
	// setsAside: under the consumer's name, replayed by operators; else
	// logged and acknowledged.
	setsAside bool
}

var (
	planeReactions   = reacting{from: jetstream.DeliverAllPolicy, setsAside: true}
	outsideReactions = reacting{from: jetstream.DeliverNewPolicy}
)

func (l *Log) react(ctx context.Context, name string, how reacting, reactions []Reaction) (Subscription, error) {
	r := map[string][]Handler{}
	var filters []string
	for _, x := range reactions {
		if r[x.typ] == nil {
			filters = append(filters, l.TypeFilter(x.typ))
		}
		r[x.typ] = append(r[x.typ], x.handle)
	}
	if len(filters) == 0 {
		return nil, errs.New(errs.Invalid, "reactions %s react to nothing", name)
	}
	filters = l.keepNewer(ctx, name, filters)
	slices.Sort(filters)
	cons, err := l.durable(ctx, l.cfg.Stream, jetstream.ConsumerConfig{
		Durable: name, Description: "Steward reactions: " + name, FilterSubjects: filters, DeliverPolicy: how.from,
	})
	if err != nil {
		return nil, err
	}
	log := l.cfg.Logger.With("consumer", name)
	handle := func(msg jetstream.Msg) {
		meta, err := msg.Metadata()
		if err != nil {
			log.Error("event without metadata", "subject", msg.Subject(), "err", err)
			_ = msg.Term()
			return
		}
		setAside := func(cause error) {
			if !how.setsAside {
				log.Error("event not taken, and left to the log's readers", "seq", meta.Sequence.Stream, "err", cause)
				_ = msg.Ack()
				return
			}
			if derr := l.setAside(ctx, name, msg.Subject(), meta.Sequence.Stream, msg.Data(), cause); derr != nil {
				log.Error("set aside bad event", "seq", meta.Sequence.Stream, "err", derr)
				_ = msg.NakWithDelay(backoff(meta.NumDelivered))
				return
			}
			_ = msg.Ack()
		}
		// Route by the hashed type inside the event, never by the
		// unhashed header, so that no one can steer or hide an event by
		// relabelling it.
		rec, err := l.open(meta.Sequence.Stream, msg.Subject(), msg.Data())
		if errors.Is(err, event.ErrUnknownType) {
			// A newer build's type, which this consumer's filter holds
			// for a newer replica (keepNewer): left for it, not handled.
			log.Warn("event of a type this build does not know; left to a newer build", "seq", meta.Sequence.Stream, "err", err)
			_ = msg.NakWithDelay(backoff(meta.NumDelivered))
			return
		}
		if err != nil {
			setAside(err)
			return
		}
		l.deliver(ctx, delivery{name: name, handlers: r[rec.Event.Type], msg: msg, attempt: meta.NumDelivered, log: log, rec: rec, permanent: setAside})
	}
	ls := newLanes(reactionLanes, l.chainOf, handle)
	sub := &laneSubscription{pull: startPull(cons, ls.route, l.cfg.SoleConsumer, log), lanes: ls}
	if !how.setsAside {
		return sub, nil
	}
	if sub.replays, err = l.reactToReplays(ctx, name, r, log); err != nil {
		sub.Stop()
		return nil, err
	}
	return sub, nil
}

// delivery is one event handed to a consumer's reactions: by the consumer
// itself, or again by an operator's replay (replay.go).
type delivery struct {
	name     string
	handlers []Handler // the consumer's reactions to the event's type
	msg      jetstream.Msg
	attempt  uint64 // how many times msg was delivered
	rec      *stewardv1.EventRecord
	log      *slog.Logger
	// done, if set, runs when the reactions succeed, before msg is
	// acknowledged; its error redelivers msg.
	done func() error
	// permanent settles msg when a reaction fails for good.
	permanent func(cause error)
}

// deliver runs d's reactions in order — the first to fail stops the rest —
// and settles d.msg by their result: acknowledged on success, redelivered
// when not yet (errs.Later) or on a passing failure, and handed to
// d.permanent on one that will not go away (Permanent).
func (l *Log) deliver(ctx context.Context, d delivery) {
	ev, seq := d.rec.Event, d.rec.Sequence
	h := func(ctx context.Context, rec *stewardv1.EventRecord) error {
		for _, h := range d.handlers {
			if err := h(ctx, rec); err != nil {
				return err
			}
		}
		return nil
	}
	work := &detached{settle: func(err error) {
		if err == nil && d.done != nil {
			err = d.done()
		}
		later, notYet := errs.LaterBy(err)
		switch {
		case err == nil:
			_ = d.msg.Ack()
		case notYet:
			d.log.Debug("reaction: not yet", "type", ev.Type, "task", ev.TaskId, "seq", seq, "why", err)
			_ = d.msg.NakWithDelay(later)
		case Permanent(err):
			d.permanent(fmt.Errorf("%s reaction to %s: %w", d.name, ev.Type, err))
		default:
			d.log.Warn("reaction failed; will redeliver", "type", ev.Type, "task", ev.TaskId, "seq", seq, "attempt", d.attempt, "err", err)
			_ = d.msg.NakWithDelay(backoff(d.attempt))
		}
	}}
	hctx := context.WithValue(context.WithValue(ctx, msgKey{}, d.msg), detachKey{}, work)
	hctx = WithHandled(hctx, d.rec)
	hctx, end := l.reactionSpan(hctx, d.name, d.rec)
	err := h(hctx, d.rec)
	end(err)
	work.done(err)
}

// ReactionAckWait is how long JetStream waits for a reaction before it
// delivers the event again. It is short because it is also how long a
// reaction cut off by a crash waits to be taken up again after a restart
// (the server remembers the delivery); a reaction that runs longer — a
// tool call — says it is still working with InProgress.
const ReactionAckWait = 5 * time.Second

// durable creates (or updates) a reaction consumer on stream as cfg names
// it — acknowledged one by one within ReactionAckWait, redelivered without
// end, from the start unless cfg says otherwise — and, where this process is its only reader
// (SoleConsumer), resets it to its ack floor, so that what a crashed
// predecessor had in hand comes again at once.
func (l *Log) durable(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	cfg.AckPolicy, cfg.AckWait, cfg.MaxDeliver = jetstream.AckExplicitPolicy, ReactionAckWait, -1
	cons, err := l.js.CreateOrUpdateConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, err
	}
	if l.cfg.SoleConsumer {
		if _, err := l.js.ResetConsumer(ctx, stream, cfg.Durable); err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "reset consumer %s", cfg.Durable)
		}
	}
	return cons, nil
}

type msgKey struct{}

type detachKey struct{}

// detached is one event's work: the reaction and the parts it went on
// with apart (Detach). The event is settled — acknowledged, redelivered
// or set aside — once all are done, by the first error among them.
type detached struct {
	mu     sync.Mutex
	n      int // parts still going apart from the reaction itself
	first  error
	settle func(error)
}

func (d *detached) add() {
	d.mu.Lock()
	d.n++
	d.mu.Unlock()
}

func (d *detached) done(err error) {
	d.mu.Lock()
	if d.first == nil {
		d.first = err
	}
	d.n--
	last := d.n < 0
	d.mu.Unlock()
	if last {
		d.settle(d.first)
	}
}

// Detach lets a reaction go on with part of its work after it returns,
// such as a tool call: the consumer moves on to the next event of the same
// task at once, while the event stays this process's (kept in progress,
// not redelivered) until finish is called with the part's result. The
// event is settled by the reaction's result and every part's together.
// Outside a reaction ok is false, and the caller does the work in line.
func Detach(ctx context.Context) (finish func(error), ok bool) {
	d, ok := ctx.Value(detachKey{}).(*detached)
	if !ok {
		return nil, false
	}
	d.add()
	var once sync.Once
	return func(err error) { once.Do(func() { d.done(err) }) }, true
}

// InProgress tells JetStream that the reaction running under ctx is still
// working on its event, so that the event is not redelivered while a long
// call is in flight. Outside a reaction it does nothing.
func InProgress(ctx context.Context) {
	if msg, ok := ctx.Value(msgKey{}).(jetstream.Msg); ok {
		_ = msg.InProgress()
	}
}

// reactionLanes is how many events of different tasks one consumer handles
// at once. Reactions spend most of their time waiting on the log, so lanes
// overlap those waits; one task's events always share a lane, in order.
const reactionLanes = 8

// lanes hands messages to a fixed set of goroutines by task subject.
type lanes struct {
	chans []chan jetstream.Msg
	key   func(subject string) string // the chain a subject belongs to
	seed  maphash.Seed
	done  sync.WaitGroup
	// handingBack is set when the subscription stops: a message not yet
	// begun is handed back (handBack).
	handingBack atomic.Bool
}

func newLanes(n int, key func(subject string) string, handle func(jetstream.Msg)) *lanes {
	ls := &lanes{chans: make([]chan jetstream.Msg, n), key: key, seed: maphash.MakeSeed()}
	for i := range ls.chans {
		ch := make(chan jetstream.Msg, 64)
		ls.chans[i] = ch
		ls.done.Add(1)
		go func() {
			defer ls.done.Done()
			for msg := range ch {
				if ls.handingBack.Load() {
					_ = msg.Nak()
					continue
				}
				handle(msg)
			}
		}()
	}
	return ls
}

// handBack makes the lanes give back every message they have not begun,
// for the server to deliver at once to another process of the consumer
// (a nak without delay), while the reactions already running finish.
func (ls *lanes) handBack() { ls.handingBack.Store(true) }

// route queues msg on its chain's lane; a full lane holds the consumer back.
func (ls *lanes) route(msg jetstream.Msg) {
	// maphash mixes every bit of the key; FNV-1a's low bits, which a
	// modulus by 8 keeps, depend only on the low bits of each byte.
	ls.chans[maphash.String(ls.seed, ls.key(msg.Subject()))%uint64(len(ls.chans))] <- msg
}

// close lets the lanes finish what they hold, then ends them.
func (ls *lanes) close() {
	for _, ch := range ls.chans {
		close(ch)
	}
	ls.done.Wait()
}

// laneSubscription stops the fetches of its replay requests and of its
// consumer, then drains its lanes.
type laneSubscription struct {
	pull    *puller
	lanes   *lanes
	replays *puller
	once    sync.Once
}

// Stop lets the reactions running finish and hands back what this process
// holds and has not begun — what its lanes queue and what the fetch in
// flight brings — so that another process of the consumer (a plane's
// other replica) has it at once rather than after ReactionAckWait.
func (s *laneSubscription) Stop() {
	s.once.Do(func() {
		s.lanes.handBack()
		var fetching sync.WaitGroup
		for _, p := range []*puller{s.replays, s.pull} {
			if p != nil {
				fetching.Go(p.stop)
			}
		}
		fetching.Wait()
		s.lanes.close()
	})
}
