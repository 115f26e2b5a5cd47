// Package execution is the execution plane: the only place side effects
// happen, and only under a permit. It keeps the tool registry
// (ToolService; every registration an event), and reacts to permits: it
// claims the permit atomically (once, ever, however many workers race),
// records the action as pending, re-checks the stored request against the
// permit's hash, dispatches through the tool's adapter with the action's
// op_key, and records the outcome — succeeded, failed with a class, or
// unknown when the call went out and no answer came back.
package execution

import (
	"context"
	"log/slog"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/execution/adapter"
)

// PlaneName is the execution plane's name in events and consumer names.
const PlaneName = "execution"

// ClaimBucket holds one key per claimed permit: KV create-only makes the
// first claim win, across every worker.
const ClaimBucket = "STEWARD_CLAIMS"

// Config is what an execution plane needs besides the log.
type Config struct {
	Tools    *toolreg.Registry
	Requests *action.Store
	Results  *action.Store
	Adapters adapter.Set
	Claims   jetstream.KeyValue
	// Worker names this process in claims; unique per process.
	Worker string
	// Consumer is the durable consumer's name; workers that share one
	// share the permits, workers with their own each see every permit
	// (and the claim decides). Default "execution".
	Consumer string
}

// Plane is the execution plane. Its methods are safe for concurrent use.
type Plane struct {
	log    *eventlog.Log
	logger *slog.Logger
	cfg    Config
	sub    eventlog.Subscription
}

// New returns an execution plane over log.
func New(log *eventlog.Log, logger *slog.Logger, cfg Config) *Plane {
	if cfg.Consumer == "" {
		cfg.Consumer = PlaneName
	}
	return &Plane{log: log, logger: logger.With("plane", PlaneName, "worker", cfg.Worker), cfg: cfg}
}

// OpenClaims opens (creating if missing) the claim bucket.
func OpenClaims(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return action.OpenBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: ClaimBucket, Description: "Steward permit claims: first create wins", History: 1, Replicas: max(replicas, 1),
	})
}

// Start runs the plane's reactions.
func (p *Plane) Start(ctx context.Context) error {
	sub, err := p.log.React(ctx, p.cfg.Consumer, eventlog.Reactions{
		event.TypeActionPermitted: p.execute,
		// Permits that arrived while the task was paused wait for this.
		event.TypeTaskResumed: p.resume,
	})
	if err != nil {
		return err
	}
	p.sub = sub
	return nil
}

// Stop stops the plane's reactions.
func (p *Plane) Stop() {
	if p.sub != nil {
		p.sub.Stop()
	}
}

// Services returns the Connect services the plane serves, built with opts.
func (p *Plane) Services(opts []connect.HandlerOption) []rpc.Service {
	path, h := stewardv1connect.NewToolServiceHandler(&toolService{plane: p}, opts...)
	return []rpc.Service{{Name: stewardv1connect.ToolServiceName, Path: path, Handler: h}}
}
