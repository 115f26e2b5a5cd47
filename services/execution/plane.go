// Package execution is the execution plane: it will claim permits, dispatch
// tools through adapters with the action's op_key, record outcomes, and own
// retries, circuit breakers and reconciliation of unknown outcomes. Today it
// runs no reactions and serves no RPCs; it exists so that deployments
// already have its process, its stream access and its health check. It
// causes no side effects yet.
package execution

import (
	"context"
	"log/slog"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/rpc"
)

// PlaneName is the execution plane's name in events and consumer names.
const PlaneName = "execution"

// Plane is the execution plane.
type Plane struct {
	log    *eventlog.Log
	logger *slog.Logger
}

// New returns a execution plane over log.
func New(log *eventlog.Log, logger *slog.Logger) *Plane {
	return &Plane{log: log, logger: logger.With("plane", PlaneName)}
}

// Start runs the plane's reactions (none yet).
func (p *Plane) Start(context.Context) error { return nil }

// Stop stops the plane.
func (p *Plane) Stop() {}

// Services returns the Connect services the plane serves (none yet).
func (p *Plane) Services() []rpc.Service { return nil }
