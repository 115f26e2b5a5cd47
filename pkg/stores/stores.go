// Package stores opens what every plane stands on — the event log, the
// request and result stores, the durable timers and the tool registry — in
// one place, so that the binary and the tests run over the same wiring and
// a test never builds a configuration the binary does not.
package stores

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/taskstore"
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
	// Writers, by plane, are the connections each plane writes through
	// (steward dev, one NATS user per plane): events and timers go
	// through their owner's, and As(plane) gives the plane request and
	// result stores that put through its own. See eventlog.Config.
	Writers map[string]jetstream.JetStream
	// Harden says js may update streams (steward dev's own connection,
	// which is NATS's admin): a bucket of an earlier version is made to
	// refuse roll-ups and purges (bucket.Config.Harden).
	Harden bool
	// Plane, when set, is the one plane this process runs (steward serve):
	// the policy bucket is opened only for governance and state, whose
	// NATS users alone may (pkg/natsperm).
	Plane string
	// Tracing records the spans of governed actions (eventlog.Config).
	Tracing trace.TracerProvider
	// SharedKeys makes every store here write new content under its hash
	// alone, the form builds before per-task keys read (action.Store.Shared,
	// steward --content-keys=shared): while they may run beside this one.
	SharedKeys bool
}

// Set is the stores a process's planes share.
type Set struct {
	Log *eventlog.Log
	// Tasks reads and writes the log's tasks; one for every plane of the
	// process, so that what one folds the next finds current.
	Tasks    *taskstore.Store
	Requests *action.Store // canonical requests, by hash
	Results  *action.Store // tool results and artifacts, by hash
	// Policy keeps policy inputs and bundle sources (governance writes,
	// state reads).
	Policy *policystore.Store
	Timers *timer.Timers
	// Tools follows the tool registrations on the log until Close.
	Tools *toolreg.Registry

	byPlane map[string]*Set
	stop    func()
}

// Open opens (creating where missing) the stores on js.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Set, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log, err := eventlog.Open(ctx, js, eventlog.Config{Logger: cfg.Logger, Replicas: cfg.Replicas, SoleConsumer: cfg.SoleConsumer,
		Writers: cfg.Writers, HardenBuckets: cfg.Harden, Tracing: cfg.Tracing})
	if err != nil {
		return nil, err
	}
	store := func(js jetstream.JetStream, name string, harden bool) (*action.Store, error) {
		s, err := action.OpenStore(ctx, js, bucket.Config{Name: name, Replicas: cfg.Replicas, Harden: harden, Logger: cfg.Logger})
		if err == nil && cfg.SharedKeys {
			s = s.Shared()
		}
		return s, err
	}
	policy := func(js jetstream.JetStream, harden bool) (*policystore.Store, error) {
		p, err := policystore.Open(ctx, js, bucket.Config{Replicas: cfg.Replicas, Harden: harden, Logger: cfg.Logger})
		if err == nil && cfg.SharedKeys {
			p = p.Shared()
		}
		return p, err
	}
	requests, err := store(js, action.RequestBucket, cfg.Harden)
	if err != nil {
		return nil, err
	}
	results, err := store(js, action.ResultBucket, cfg.Harden)
	if err != nil {
		return nil, err
	}
	var pol *policystore.Store
	if cfg.Plane == "" || keepsPolicy(cfg.Plane) {
		if pol, err = policy(js, cfg.Harden); err != nil {
			return nil, err
		}
	}
	timers, err := timer.Open(ctx, js, timer.Config{Replicas: cfg.Replicas, Logger: cfg.Logger, SoleConsumer: cfg.SoleConsumer, Writers: cfg.Writers})
	if err != nil {
		return nil, err
	}
	tasks := taskstore.New(log)
	byPlane := map[string]*Set{}
	for plane, w := range cfg.Writers {
		ps := &Set{Log: log, Tasks: tasks, Timers: timers}
		if ps.Requests, err = store(w, action.RequestBucket, false); err != nil {
			return nil, err
		}
		if ps.Results, err = store(w, action.ResultBucket, false); err != nil {
			return nil, err
		}
		// Only the planes the bucket is for may open it (pkg/natsperm).
		if keepsPolicy(plane) {
			if ps.Policy, err = policy(w, false); err != nil {
				return nil, err
			}
		}
		byPlane[plane] = ps
	}
	tools := toolreg.New(cfg.Logger)
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tools.Run(rctx, log)
	}()
	for _, ps := range byPlane {
		ps.Tools = tools
	}
	return &Set{Log: log, Tasks: tasks, Requests: requests, Results: results, Policy: pol, Timers: timers, Tools: tools, byPlane: byPlane,
		stop: func() { cancel(); <-done }}, nil
}

// As returns the stores as plane uses them: the same log, timers and
// tools, and request and result stores that put through plane's writer
// (Config.Writers) — s itself when plane has none. Close only s.
func (s *Set) As(plane string) *Set {
	if ps, ok := s.byPlane[plane]; ok {
		return ps
	}
	return s
}

// Close stops following the tool registrations. The stores themselves
// live on the server.
func (s *Set) Close() {
	if s.stop != nil {
		s.stop()
	}
}

// keepsPolicy reports whether plane uses the policy bucket: governance
// writes it, state reads it.
func keepsPolicy(plane string) bool {
	return plane == event.PlaneGovernance || plane == event.PlaneState
}
