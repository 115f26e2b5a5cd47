// Package control is the control plane: it accepts task commands over
// TaskService, checks each against the task folded from its events, and
// appends the events that record it. It also starts created tasks, through
// a durable reaction on the log; drives the compensation of a failed or
// cancelled task, action by action; and stops a task that keeps failing
// the same way, asking for help. It records a task's artifacts, evaluates
// its acceptance criteria (CEL, see criteria.go) when the task is marked
// produced, and takes its acceptance owner's decision.
//
// Commands are checked by dry-running the event through the one fold
// (pkg/task) before it is appended, so an illegal transition appends
// nothing. Appends are conditional on the task's last sequence; on a
// conflict the command re-reads, re-checks and retries.
package control

import (
	"context"
	"log/slog"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/toolreg"
)

// PlaneName is the control plane's name in events and consumer names.
const PlaneName = event.PlaneControl

// Plane is the control plane. Its methods are safe for concurrent use.
type Plane struct {
	log      *eventlog.Log
	logger   *slog.Logger
	tools    *toolreg.Registry
	requests *action.Store
	results  *action.Store
	sub      eventlog.Subscription
	// Artifact size limits; see WithArtifactLimits.
	maxInline, maxReferenced int64
}

// Option configures a Plane.
type Option func(*Plane)

// WithActions lets the plane take proposed actions: it needs the tool
// registry to check them and the request store to keep them. It also runs
// the compensation driver, which proposes actions of its own.
func WithActions(tools *toolreg.Registry, requests *action.Store) Option {
	return func(p *Plane) { p.tools, p.requests = tools, requests }
}

// WithResults gives the plane the store of tool results
// (action.ResultBucket). The compensation driver hands each compensating
// tool the result of the call it undoes, and waits (retrying) for this
// store while a task it compensates has such a result.
func WithResults(results *action.Store) Option {
	return func(p *Plane) { p.results = results }
}

// WithArtifactLimits sets the largest artifact SubmitArtifact takes inline
// (stored in the results store) and by reference; zero keeps the default
// (DefaultMaxInlineArtifact, DefaultMaxReferencedArtifact). Inline content
// travels in one NATS message, so its limit must stay under the server's
// max_payload, and the request under the RPC edge's rpc.MaxRequestBytes.
func WithArtifactLimits(inline, referenced int64) Option {
	return func(p *Plane) {
		if inline > 0 {
			p.maxInline = inline
		}
		if referenced > 0 {
			p.maxReferenced = referenced
		}
	}
}

// New returns a control plane over log.
func New(log *eventlog.Log, logger *slog.Logger, opts ...Option) *Plane {
	p := &Plane{
		log: log, logger: logger.With("plane", PlaneName),
		maxInline: DefaultMaxInlineArtifact, maxReferenced: DefaultMaxReferencedArtifact,
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Start runs the plane's reactions.
func (p *Plane) Start(ctx context.Context) error {
	sub, err := p.log.React(ctx, PlaneName, p.reactions()...)
	if err != nil {
		return err
	}
	p.sub = sub
	return nil
}

// Stop stops the plane's reactions; RPCs keep working until the server
// stops.
func (p *Plane) Stop() {
	if p.sub != nil {
		p.sub.Stop()
	}
}

// Services returns the Connect services the plane serves, built with opts.
func (p *Plane) Services(opts []connect.HandlerOption) []rpc.Service {
	path, h := stewardv1connect.NewTaskServiceHandler(&taskService{plane: p}, opts...)
	return []rpc.Service{{Name: stewardv1connect.TaskServiceName, Path: path, Handler: h}}
}
