// Package timer keeps durable one-shot timers on JetStream message
// schedules (nats-server 2.12+). Set stores a schedule message; at its due
// time the server itself publishes the timer to a target subject, and Run
// hands it to a handler through a durable consumer. There is no timer
// service of Steward's own: a timer set before a restart of the process or
// the server fires after it.
//
// A kind's first token names its owner, the plane that sets and handles
// it ("governance" for "governance.approval"), and each owner's timers
// live in a stream of their own (Stream). JetStream honours headers on a
// stream's messages that NATS permissions do not see — a roll-up purges
// the whole stream, a schedule's purge header removes another schedule —
// so a stream shared by two planes would let either erase the other's
// timers. Subjects, for a prefix p (default steward.timer):
//
//	p.<owner>.at.<kind>.<token>     the schedule, one per (kind, id)
//	p.<owner>.fired.<kind>.<token>  the timer once due, carrying kind, id,
//	                                due time (headers HeaderKind, HeaderID,
//	                                HeaderAt) and payload
//
// where token is a hash of the id, so any id makes one subject token.
// Timers set before owners had streams of their own, in the stream named
// Config.Stream under p.at.> and p.fired.>, are moved to their owner's
// stream when it is first opened (migrate.go).
//
// A timer fires at most once: a second Set of the same (kind, id) is a
// no-op while the first is pending or its fired message is kept (for
// FiredRetention after it fired). Delivery to handlers is at least once, so
// handlers must be idempotent.
//
// A *Timers is safe for concurrent use.
package timer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/errs"
)

// Default names. They are part of the deployment contract: NATS
// permissions in clustered mode are written against them. An owner's
// timers are in the stream Stream(DefaultStream, owner).
const (
	DefaultStream = "STEWARD_TIMERS"
	DefaultPrefix = "steward.timer"
)

// Stream returns the name of the stream that keeps owner's timers, for
// the base name base (Config.Stream): STEWARD_TIMERS_GOVERNANCE for
// governance's.
func Stream(base, owner string) string { return base + "_" + strings.ToUpper(owner) }

// Owner returns the owner of timers of kind: its first token.
func Owner(kind string) string {
	owner, _, _ := strings.Cut(kind, ".")
	return owner
}

// FiredRetention is how long a fired timer stays in the stream after it
// came due. It is the window in which setting the same (kind, id) again is
// recognised and ignored; after it the message expires on its own.
const FiredRetention = 24 * time.Hour

// Config says where the timers live. The zero value is filled with
// defaults.
type Config struct {
	// Stream is the base of the streams' names (Stream); default
	// DefaultStream. Before each owner had a stream of its own, all
	// timers were in the stream of this name.
	Stream string
	// Prefix is the subjects' first tokens; default DefaultPrefix.
	Prefix string
	// Replicas of a stream when Timers creates it; default 1.
	Replicas int
	// Logger gets handler failures; default slog.Default().
	Logger *slog.Logger
	// SoleConsumer: as eventlog.Config's. Run resets its consumer to its
	// ack floor as it starts, so that a timer a crashed predecessor had in
	// hand fires again at once.
	SoleConsumer bool
	// Writers, by owner, are the connections Set goes through: a timer
	// through its owner's. As eventlog.Config's: in steward dev each
	// plane sets timers as its own NATS user, which may set only its own
	// kinds. Without one, Set uses Open's connection.
	Writers map[string]jetstream.JetStream

	// sweepEvery is how often Run moves again what the shared stream of
	// before holds (migrate.go); default 30s.
	sweepEvery time.Duration
}

func (c Config) withDefaults() Config {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.sweepEvery == 0 {
		c.sweepEvery = 30 * time.Second
	}
	return c
}

// Timers sets timers and runs consumers of fired ones. It is safe for
// concurrent use.
type Timers struct {
	js  jetstream.JetStream
	cfg Config

	mu      sync.Mutex
	streams map[string]jetstream.Stream // by owner, once opened
	shared  map[string]bool             // by owner: the shared stream of before was there when it was opened
}

// Open returns Timers over js. It touches no stream: an owner's stream is
// opened, and created where missing, the first time Set or Run needs it,
// so that a process opens only the streams of the timers it uses, and a
// plane's NATS user need not be allowed another's.
func Open(_ context.Context, js jetstream.JetStream, cfg Config) (*Timers, error) {
	return &Timers{js: js, cfg: cfg.withDefaults(), streams: map[string]jetstream.Stream{}, shared: map[string]bool{}}, nil
}

// Config returns the configuration with defaults filled in.
func (t *Timers) Config() Config { return t.cfg }

// StreamOf returns the name of the stream of owner's timers.
func (t *Timers) StreamOf(owner string) string { return Stream(t.cfg.Stream, owner) }

// Filter returns the subject filter that takes every timer of kind at
// stage: "at" while set and not yet due, "fired" once due.
func (t *Timers) Filter(stage, kind string) string { return t.subject(stage, kind, "*") }

// stream returns owner's stream, opening it (and moving owner's timers
// from the shared stream of before) the first time. A failure is not
// kept: the next call tries again.
func (t *Timers) stream(ctx context.Context, owner string) (jetstream.Stream, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.streams[owner]; ok {
		return s, nil
	}
	s, err := t.open(ctx, owner)
	if err != nil {
		return nil, err
	}
	shared, err := t.migrate(ctx, owner, time.Time{})
	if err != nil {
		return nil, err
	}
	t.streams[owner] = s
	t.shared[owner] = shared
	return s, nil
}

// sharedAtOpen reports whether the shared stream of before was there when
// owner's stream was opened.
func (t *Timers) sharedAtOpen(owner string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.shared[owner]
}

// open makes sure owner's stream exists. A missing stream is created; an
// existing one is used as it is, never rewritten, but it must allow
// message schedules and per-message TTLs.
func (t *Timers) open(ctx context.Context, owner string) (jetstream.Stream, error) {
	want := jetstream.StreamConfig{
		Name:        Stream(t.cfg.Stream, owner),
		Description: "Steward timers of " + owner + ": schedules and the timers they fired",
		Subjects:    []string{t.cfg.Prefix + "." + owner + ".>"},
		Storage:     jetstream.FileStorage,
		Replicas:    t.cfg.Replicas,
		// Limits, not WorkQueue or Interest: Interest retention drops a
		// schedule at once because no consumer wants its subject, and both
		// would delete a fired timer on ack, forgetting that it fired — a
		// later Set of the same (kind, id) would then fire it again.
		// Fired timers expire instead, by a per-message TTL the schedule
		// gives them (FiredRetention); schedules never expire, so no
		// MaxAge.
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld, // schedules refuse DiscardNew
		AllowMsgSchedules: true,
		AllowMsgTTL:       true,
		AllowRollup:       true, // a schedule replaces its subject by rollup; the server requires it
	}
	stream, err := t.js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = t.js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			stream, err = t.js.Stream(ctx, want.Name) // another process created it first
		}
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "open timer stream %s", want.Name)
	}
	have := stream.CachedInfo().Config
	if !have.AllowMsgSchedules || !have.AllowMsgTTL {
		return nil, fmt.Errorf("open timer stream %s: it must allow message schedules and message TTLs", want.Name)
	}
	bucket.WarnReplicas(t.cfg.Logger, want.Name, have.Replicas, want.Replicas)
	return stream, nil
}
