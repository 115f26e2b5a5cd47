// Package governance is the governance plane: it will evaluate OPA policy
// into PolicySnapshots, ask for approvals, issue permits, and own
// credentials and budgets. Today it runs no reactions and serves no RPCs;
// it exists so that deployments already have its process, its stream
// access and its health check. Nothing here decides anything yet.
package governance

import (
	"context"
	"log/slog"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/rpc"
)

// PlaneName is the governance plane's name in events and consumer names.
const PlaneName = "governance"

// Plane is the governance plane.
type Plane struct {
	log    *eventlog.Log
	logger *slog.Logger
}

// New returns a governance plane over log.
func New(log *eventlog.Log, logger *slog.Logger) *Plane {
	return &Plane{log: log, logger: logger.With("plane", PlaneName)}
}

// Start runs the plane's reactions (none yet).
func (p *Plane) Start(context.Context) error { return nil }

// Stop stops the plane.
func (p *Plane) Stop() {}

// Services returns the Connect services the plane serves (none yet).
func (p *Plane) Services() []rpc.Service { return nil }
