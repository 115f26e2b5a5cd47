// Package timer keeps durable one-shot timers on JetStream message
// schedules (nats-server 2.12+). Set stores a schedule message; at its due
// time the server itself publishes the timer to a target subject, and Run
// hands it to a handler through a durable consumer. There is no timer
// service of Steward's own: a timer set before a restart of the process or
// the server fires after it.
//
// Subjects, for a prefix p (default steward.timer):
//
//	p.at.<kind>.<token>     the schedule, one per (kind, id)
//	p.fired.<kind>.<token>  the timer once due, carrying kind, id, due time
//	                        (headers HeaderKind, HeaderID, HeaderAt) and payload
//
// where token is a hash of the id, so any id makes one subject token.
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
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Default names. They are part of the deployment contract: NATS
// permissions in clustered mode are written against them.
const (
	DefaultStream = "STEWARD_TIMERS"
	DefaultPrefix = "steward.timer"
)

// FiredRetention is how long a fired timer stays in the stream after it
// came due. It is the window in which setting the same (kind, id) again is
// recognised and ignored; after it the message expires on its own.
const FiredRetention = 24 * time.Hour

// Config says where the timers live. The zero value is filled with
// defaults.
type Config struct {
	// Stream is the stream's name; default DefaultStream.
	Stream string
	// Prefix is the subjects' first tokens; default DefaultPrefix.
	Prefix string
	// Replicas of the stream when Open creates it; default 1.
	Replicas int
	// Logger gets handler failures; default slog.Default().
	Logger *slog.Logger
	// SoleConsumer: as eventlog.Config's. Run resets its consumer to its
	// ack floor as it starts, so that a timer a crashed predecessor had in
	// hand fires again at once.
	SoleConsumer bool
	// Writers, by plane, are the connections Set goes through: a timer
	// through the writer named by its kind's first token
	// ("governance.approval" → governance's). As eventlog.Config's: in
	// steward dev each plane sets timers as its own NATS user, which may
	// set only its own kinds. Without one, Set uses Open's connection.
	Writers map[string]jetstream.JetStream
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
	return c
}

// Timers sets timers and runs consumers of fired ones. It is safe for
// concurrent use.
type Timers struct {
	js  jetstream.JetStream
	cfg Config
}

// Open makes sure the timer stream exists and returns Timers. A missing
// stream is created; an existing one is used as it is, never rewritten, but
// it must allow message schedules and per-message TTLs. Open is idempotent.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Timers, error) {
	cfg = cfg.withDefaults()
	want := jetstream.StreamConfig{
		Name:        cfg.Stream,
		Description: "Steward timers: schedules and the timers they fired",
		Subjects:    []string{cfg.Prefix + ".at.>", cfg.Prefix + ".fired.>"},
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		// Limits, not WorkQueue or Interest: Interest retention drops a
		// schedule at once because no consumer wants p.at.>, and both
		// would delete a fired timer on ack, forgetting that it fired — a
		// later Set of the same (kind, id) would then fire it again.
		// Fired timers expire instead, by a per-message TTL the schedule
		// gives them (FiredRetention); schedules never expire, so no
		// MaxAge.
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld, // schedules refuse DiscardNew
		AllowMsgSchedules: true,
		AllowMsgTTL:       true,
		AllowRollup:       true, // a schedule replaces its subject by rollup
	}
	stream, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			stream, err = js.Stream(ctx, want.Name) // another process created it first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open timer stream %s: %w", want.Name, err)
	}
	have := stream.CachedInfo().Config
	if !have.AllowMsgSchedules || !have.AllowMsgTTL {
		return nil, fmt.Errorf("open timer stream %s: it must allow message schedules and message TTLs", want.Name)
	}
	if have.Replicas != want.Replicas {
		cfg.Logger.Warn("timer stream replica count differs from the configured one; leaving the stream as it is",
			"stream", want.Name, "stream_replicas", have.Replicas, "configured", want.Replicas)
	}
	return &Timers{js: js, cfg: cfg}, nil
}

// Config returns the configuration with defaults filled in.
func (t *Timers) Config() Config { return t.cfg }
