// Package control is the control plane: it accepts task commands over
// TaskService, checks each against the task folded from its events, and
// appends the events that record it. It also starts created tasks, through
// a durable reaction on the log.
//
// Commands are checked by dry-running the event through the one fold
// (pkg/task) before it is appended, so an illegal transition appends
// nothing. Appends are conditional on the task's last sequence; on a
// conflict the command re-reads, re-checks and retries.
package control

import (
	"context"
	"log/slog"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// PlaneName is the control plane's name in events and consumer names.
const PlaneName = "control"

// Plane is the control plane. Its methods are safe for concurrent use.
type Plane struct {
	log    *eventlog.Log
	logger *slog.Logger
	sub    eventlog.Subscription
}

// New returns a control plane over log.
func New(log *eventlog.Log, logger *slog.Logger) *Plane {
	return &Plane{log: log, logger: logger.With("plane", PlaneName)}
}

// Start runs the plane's reactions.
func (p *Plane) Start(ctx context.Context) error {
	sub, err := p.log.React(ctx, PlaneName, p.reactions())
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

// Services returns the Connect services the plane serves.
func (p *Plane) Services() []rpc.Service {
	path, h := stewardv1connect.NewTaskServiceHandler(&taskService{plane: p}, rpc.HandlerOptions(p.logger)...)
	return []rpc.Service{{Name: stewardv1connect.TaskServiceName, Path: path, Handler: h}}
}
