// Package governance is the governance plane. It reacts to proposed
// actions: it evaluates the OPA policy bundle into a PolicySnapshot and then
// issues a one-time ActionPermit, denies the action, or asks a person to
// approve it. People decide through GovernanceService; a decision binds to
// the exact action hash, and before a permit follows an approval, policy
// and the task's state are checked again.
//
// Every reaction is idempotent: its events have ids derived from the
// action, and a step already on the log is reused, never recomputed.
package governance

import (
	"context"
	"log/slog"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/governance/policy"
)

// PlaneName is the governance plane's name in events and consumer names.
const PlaneName = "governance"

// PolicyReloadInterval is how often the policy directory is checked for
// changes.
const PolicyReloadInterval = time.Second

// Plane is the governance plane. Its methods are safe for concurrent use.
type Plane struct {
	log       *eventlog.Log
	logger    *slog.Logger
	engine    *policy.Engine
	tools     *toolreg.Registry
	store     *action.Store
	approvals *Approvals

	sub    eventlog.Subscription
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a governance plane that decides with engine, reads tool
// contracts from tools and canonical requests from store.
func New(log *eventlog.Log, logger *slog.Logger, engine *policy.Engine, tools *toolreg.Registry, store *action.Store) *Plane {
	logger = logger.With("plane", PlaneName)
	return &Plane{log: log, logger: logger, engine: engine, tools: tools, store: store, approvals: NewApprovals(logger)}
}

// Start rebuilds the approvals index, watches the policy directory, and
// runs the plane's reactions.
func (p *Plane) Start(ctx context.Context) error {
	bg, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go func() {
		defer close(p.done)
		go p.engine.Watch(bg, PolicyReloadInterval, p.logger)
		p.log.KeepReading(bg, p.approvals)
	}()
	if err := p.approvals.Sync(ctx, p.log); err != nil {
		return err
	}
	sub, err := p.log.React(ctx, PlaneName, eventlog.Reactions{
		event.TypeActionProposed:  p.decide,
		event.TypeApprovalDecided: p.afterDecision,
	})
	if err != nil {
		return err
	}
	p.sub = sub
	return nil
}

// Stop stops the reactions, the policy watch and the approvals index.
func (p *Plane) Stop() {
	if p.sub != nil {
		p.sub.Stop()
	}
	if p.cancel != nil {
		p.cancel()
		<-p.done
	}
}

// Services returns the Connect services the plane serves, built with opts.
func (p *Plane) Services(opts []connect.HandlerOption) []rpc.Service {
	path, h := stewardv1connect.NewGovernanceServiceHandler(&governanceService{plane: p}, opts...)
	return []rpc.Service{{Name: stewardv1connect.GovernanceServiceName, Path: path, Handler: h}}
}
