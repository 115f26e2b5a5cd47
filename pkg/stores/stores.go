// Package stores opens what every plane stands on — the event log, the
// request and result stores, the durable timers and the tool registry — in
// one place, so that the binary and the tests run over the same wiring and
// a test never builds a configuration the binary does not.
package stores

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/timer"
	"github.com/steward-run/steward/pkg/toolreg"
)

// Config says how to open the stores.
type Config struct {
	// Replicas of each stream and bucket created: 1 for a single server,
	// 3 for a cluster.
	Replicas int
	Logger   *slog.Logger
	// SoleConsumer says this process is the only reader of its durable
	// consumers (steward dev); see eventlog.Config.
	SoleConsumer bool
	// SoleWriter says this process is the only writer of the log (steward
	// dev); see eventlog.Config.
	SoleWriter bool
}

// Set is the stores a process's planes share.
type Set struct {
	Log      *eventlog.Log
	Requests *action.Store // canonical requests, by hash
	Results  *action.Store // tool results and artifacts, by hash
	Timers   *timer.Timers
	// Tools follows the tool registrations on the log until Close.
	Tools *toolreg.Registry

	stop func()
}

// Open opens (creating where missing) the stores on js.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Set, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log, err := eventlog.Open(ctx, js, eventlog.Config{Logger: cfg.Logger, Replicas: cfg.Replicas, SoleConsumer: cfg.SoleConsumer, SoleWriter: cfg.SoleWriter})
	if err != nil {
		return nil, err
	}
	requests, err := action.OpenStore(ctx, js, action.RequestBucket, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	results, err := action.OpenStore(ctx, js, action.ResultBucket, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	timers, err := timer.Open(ctx, js, timer.Config{Replicas: cfg.Replicas, Logger: cfg.Logger, SoleConsumer: cfg.SoleConsumer})
	if err != nil {
		return nil, err
	}
	tools := toolreg.New(cfg.Logger)
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tools.Run(rctx, log)
	}()
	return &Set{Log: log, Requests: requests, Results: results, Timers: timers, Tools: tools,
		stop: func() { cancel(); <-done }}, nil
}

// Close stops following the tool registrations. The stores themselves
// live on the server.
func (s *Set) Close() { s.stop() }
