package timer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
)

// Fired is a timer that came due.
type Fired struct {
	Kind string
	ID   string
	// At is the due time Set was given; the timer fired at or after it.
	At      time.Time
	Payload []byte
}

// Handler reacts to a fired timer. Returning nil acknowledges it;
// returning an error redelivers it after a backoff growing from 100ms to
// 30s. A timer can be delivered more than once (a lost ack, a crash
// mid-handler, a new consumer within FiredRetention), so handlers must be
// idempotent.
type Handler func(ctx context.Context, f Fired) error

// Subscription is a running consumer. Stop it when done.
type Subscription interface{ Stop() }

// ackWait is how long a delivered timer is someone's before the server
// offers it again; a running handler keeps extending it.
//
// It is short because it is also how long a timer whose handler was cut
// off by a crash waits to be taken up again after a restart.
const ackWait = 5 * time.Second

// Run runs a durable consumer named consumer over fired timers of the given
// kinds, handing each to fn, one at a time (in the order they fired; see
// Slots), until ctx ends or the
// subscription is stopped. A kind matches exactly: "execution" does not
// take "execution.retry". Several processes may share one consumer name
// (with the same kinds): each fired timer goes to one of them. The consumer
// survives restarts and picks up timers that fired while nobody ran it.
func (t *Timers) Run(ctx context.Context, consumer string, kinds []string, fn Handler, opts ...RunOption) (Subscription, error) {
	slots := 1
	for _, o := range opts {
		slots = max(o.slots, slots)
	}
	if consumer == "" {
		return nil, errs.Field("consumer", "is empty")
	}
	if fn == nil {
		return nil, errs.Field("fn", "is nil")
	}
	if len(kinds) == 0 {
		return nil, errs.Field("kinds", "is empty")
	}
	var filters []string
	owner := Owner(kinds[0])
	for _, k := range kinds {
		if err := checkKind(k); err != nil {
			return nil, err
		}
		if Owner(k) != owner {
			return nil, errs.Field("kinds", "%s and %s have different owners: a consumer reads one owner's timers", errs.Quote(kinds[0]), errs.Quote(k))
		}
		// One token after the kind, so a kind never takes its
		// sub-kinds' timers.
		filters = append(filters, t.subject("fired", k, "*"))
	}
	slices.Sort(filters)
	filters = slices.Compact(filters) // the server refuses duplicate filters
	stream, err := t.stream(ctx, owner)
	if err != nil {
		return nil, err
	}
	name := stream.CachedInfo().Config.Name
	cons, err := t.js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{
		Durable:        consumer,
		Description:    "Steward timers: " + consumer,
		FilterSubjects: filters,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        ackWait,
		MaxDeliver:     -1,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "timer consumer %s", consumer)
	}
	if t.cfg.SoleConsumer {
		if _, err := t.js.ResetConsumer(ctx, name, consumer); err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "reset timer consumer %s", consumer)
		}
	}
	pulling, stopPulling := context.WithCancel(ctx)
	s := &subscription{cons: cons, prefix: t.cfg.Prefix, pulling: pulling, stopPulling: stopPulling, fetching: pulling, done: make(chan struct{})}
	if t.js.Conn().ConnectedClusterName() != "" {
		// On a cluster the consumer's leader may be another node, which
		// can still send a timer to an inbox a cut pull just dropped (the
		// timer would wait out its ack wait): a stop lets the pull in
		// flight end, at most pullWait later, and hands back what came.
		s.fetching = context.WithoutCancel(ctx)
	}
	if t.sharedAtOpen(owner) {
		// Before Stop can run: it waits for the sweep.
		s.sweeping.Go(func() { t.sweep(s.pulling, owner) })
	}
	s.stopOnCancel = context.AfterFunc(ctx, s.Stop)
	go s.loop(ctx, t.cfg.Logger.With("consumer", consumer), fn, slots)
	return s, nil
}

// RunOption configures Run.
type RunOption struct{ slots int }

// Slots lets Run hand up to n fired timers to fn at once, in no particular
// order. A handler that may run long (a tool call after a retry's wait)
// would otherwise keep every other timer of the process waiting behind it,
// another worker's redelivered timer among them.
func Slots(n int) RunOption { return RunOption{slots: n} }

// pullWait bounds one pull request; an idle consumer asks again this often.
const pullWait = time.Second

type subscription struct {
	cons         jetstream.Consumer
	prefix       string          // the timers' subject prefix (Config.Prefix)
	pulling      context.Context // ends on Stop or when Run's ctx ends
	stopPulling  context.CancelFunc
	fetching     context.Context // what cuts a pull in flight: pulling, but on a cluster nothing
	done         chan struct{}
	stopOnCancel func() bool
	once         sync.Once
	sweeping     sync.WaitGroup // moving timers out of the shared stream of before (Timers.sweep)
}

// Stop stops taking timers and waits for a running handler to return.
func (s *subscription) Stop() {
	s.once.Do(func() {
		s.stopOnCancel()
		s.stopPulling()
		<-s.done
		s.sweeping.Wait()
	})
}

// loop pulls one fired timer at a time, each with its own short request,
// rather than through cons.Messages: that iterator (nats.go v1.55.0) can
// skip asking for the next message when its previous pull request is
// still being sent as its answer arrives, and then asks again only when
// its missed-heartbeat timer fires, 30s later. Several timers due in the
// same second trip it. Pulling one message at a time, and only into a free
// handler slot, also keeps a timer from waiting in a buffer behind slow
// handlers until its ack wait runs out and it goes to another process
// while still queued.
func (s *subscription) loop(ctx context.Context, log *slog.Logger, fn Handler, handlerSlots int) {
	var running sync.WaitGroup
	defer close(s.done)
	defer running.Wait()
	slots := make(chan struct{}, handlerSlots)
	for s.pulling.Err() == nil {
		// A timer is pulled only when a slot is free to handle it, so none
		// waits in a buffer while its ack wait runs out.
		select {
		case slots <- struct{}{}:
		case <-s.pulling.Done():
			return
		}
		msg, err := s.next()
		if err != nil || s.pulling.Err() != nil {
			<-slots
		}
		switch {
		case err == nil && s.pulling.Err() != nil:
			_ = msg.Nak() // stopped while it came: let another process have it now
			return
		case err == nil:
			running.Go(func() {
				defer func() { <-slots }()
				handle(ctx, log, s.prefix, msg, fn)
			})
		case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining):
			return
		case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			// Nothing due yet, or stopping: the loop condition decides.
		default:
			log.Warn("timer consumer: transient error", "err", err)
			select { // do not spin on an error that persists, such as a deleted consumer
			case <-s.pulling.Done():
			case <-time.After(pullWait):
			}
		}
	}
}

// next waits up to pullWait for one fired timer; Stop cuts the wait short
// on a single server.
func (s *subscription) next() (jetstream.Msg, error) {
	ctx, cancel := context.WithTimeout(s.fetching, pullWait)
	defer cancel()
	return s.cons.Next(jetstream.FetchContext(ctx))
}

// handle runs fn on one fired timer and acknowledges or redelivers it.
func handle(ctx context.Context, log *slog.Logger, prefix string, msg jetstream.Msg, fn Handler) {
	f, err := decode(prefix, msg)
	if err != nil {
		// Not a timer Set made: no retry can help.
		log.Error("fired message is not a timer; dropping it", "subject", msg.Subject(), "err", err)
		_ = msg.Term()
		return
	}
	var attempt uint64 = 1
	if meta, err := msg.Metadata(); err == nil {
		attempt = meta.NumDelivered
	}
	stopProgress := keepInProgress(msg)
	err = fn(ctx, f)
	stopProgress()
	later, notYet := errs.LaterBy(err)
	switch {
	case err == nil:
		_ = msg.Ack()
	case ctx.Err() != nil:
		_ = msg.Nak() // shutting down: let another process have it now
	case notYet:
		log.Debug("timer: not yet", "kind", f.Kind, "id", f.ID, "why", err)
		_ = msg.NakWithDelay(later)
	default:
		log.Warn("timer handler failed; will redeliver", "kind", f.Kind, "id", f.ID, "attempt", attempt, "err", err)
		_ = msg.NakWithDelay(backoff(attempt))
	}
}

// keepInProgress extends the ack wait while a handler runs, so a slow
// handler does not get its timer handed to another process as well.
func keepInProgress(msg jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(ackWait / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				_ = msg.InProgress()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// decode reads a fired timer, and takes it only if Set made it: fired on
// its (kind, id)'s subject by the schedule Set published for them. The
// server names that schedule (Nats-Scheduler) and takes any subject of the
// stream as a schedule's target, a header NATS permissions do not see.
// Each owner's stream is its own, so this is a second line: a stream
// shared with another writer — the one of before, or a misconfigured
// deployment — would otherwise let it fire this owner's timers, headers
// and payload its own.
func decode(prefix string, msg jetstream.Msg) (Fired, error) {
	h := msg.Headers()
	f := Fired{Kind: h.Get(HeaderKind), ID: h.Get(HeaderID), Payload: msg.Data()}
	if f.Kind == "" || f.ID == "" {
		return Fired{}, errors.New("missing " + HeaderKind + " or " + HeaderID)
	}
	token := idToken(f.ID)
	if want := subject(prefix, "fired", f.Kind, token); msg.Subject() != want {
		return Fired{}, fmt.Errorf("fired on %s, not on its kind and id's subject %s", msg.Subject(), want)
	}
	if want, by := subject(prefix, "at", f.Kind, token), h.Get(jetstream.SchedulerHeader); by != want {
		return Fired{}, fmt.Errorf("fired by the schedule %q, not by its own %s", by, want)
	}
	at, err := time.Parse(time.RFC3339Nano, h.Get(HeaderAt))
	if err != nil {
		return Fired{}, err
	}
	f.At = at
	return f, nil
}

// backoff grows the redelivery delay exponentially from 100ms to 30s.
func backoff(delivered uint64) time.Duration {
	d := 100 * time.Millisecond
	for i := uint64(1); i < delivered && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}
