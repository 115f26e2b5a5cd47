// Package execution is the execution plane: the only place side effects
// happen, and only under a permit. It keeps the tool registry
// (ToolService; every registration an event), and reacts to permits: it
// verifies the permit's signature and that it names the action
// (Config.PermitKeys; permitsig.go), re-checks the stored request against
// the permit's hash, claims the
// permit and records the dispatch — one conditional ActionDispatched
// append that carries the claim, or, when something stands between the
// permit and the call, ActionClaimed first: either way once, ever,
// however many workers race — calls the tool's adapter with the action's
// op_key, and records the outcome — succeeded, failed with a class, or
// unknown when the call went out and no answer came back.
//
// It owns what happens on the bad days, too:
//   - transient failures are retried with the same op_key, after an
//     exponential backoff with full jitter, within the action's retry
//     policy; deterministic and validation failures go back to the agent;
//   - a circuit breaker per service key holds actions while a service is
//     failing: they wait (they are not failed and not dropped);
//   - a tool's limits — a cap on its calls in flight and a rate, over
//     every worker — hold calls back: they wait, their permits unclaimed,
//     and go out once (limits.go);
//   - an unknown outcome is settled by asking the tool's status query, with
//     backoff, or by a person (ActionService.SettleAction);
//   - every wait is an event plus a durable timer (pkg/timer), so a
//     restart neither loses nor resets it;
//   - a worker that dies holding a claim or a call is taken over by any
//     live worker once its lease runs out (see hold).
package execution

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/backup"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/egress"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/timer"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/execution/breaker"
	"github.com/steward-run/steward/services/execution/limit"
)

// PlaneName is the execution plane's name in events and consumer names.
const PlaneName = event.PlaneExecution

// Config is what an execution plane needs besides the log.
type Config struct {
	// Tasks is the process's store of the log's tasks (stores.Set), shared
	// by its planes; a store of the plane's own when nil.
	Tasks    *taskstore.Store
	Tools    *toolreg.Registry
	Requests *action.Store
	Results  *action.Store
	// Adapters call the tools; a tenant's http tools go through an
	// adapter of their own, under Egress.
	Adapters adapter.Set
	// Egress is where tenants' tools may not reach (pkg/egress): checked
	// on registration and on every connection of their calls and status
	// queries. Nil is the rule with nothing allowed. Global tools are
	// the platform's, called as configured.
	Egress *egress.Rule
	// HTTPOptions set up the tenants' HTTP adapter as the wiring set up
	// Adapters.HTTP: the call signer above all, so that a tenant's tool
	// can check its calls as a global tool can (docs/calltokens.md).
	HTTPOptions []adapter.HTTPOption
	// MCPOptions set up the tenants' MCP adapter as Adapters.MCP is
	// (docs/mcp.md): how long a server's tool listing is reused.
	MCPOptions []adapter.MCPOption
	// ReservedTools are names no tenant may register, compared without
	// case: the platform's tools to come (docs/tenants.md#tools).
	ReservedTools []string
	// Secrets opens the sealed values of secret parameters just before a
	// call (docs/secrets.md). Without it an action that holds some is
	// refused before dispatch.
	Secrets *secret.Sealer
	// Worker names this process in claims; unique among live workers. It
	// need not survive a restart: a worker gone is taken over after its
	// lease. Under the same name, a restart takes up its work at once.
	Worker string
	// Consumer is the durable consumer's name; workers that share one
	// share the permits, workers with their own each see every permit
	// (and the claim decides). Default "execution".
	Consumer string
	// Timers end waits and schedule status queries. Without them a wait
	// cannot be recorded, and an action that needs one stays claimed.
	Timers *timer.Timers
	// Breaker configures the circuit breakers; zero fields are defaults,
	// and a tool's contract may set its own (ToolLimits).
	Breaker breaker.Config
	// Limits holds tools' caps and rates over every worker that shares
	// its bucket (limit.Bucket). Without it a call of a tool with a cap
	// or a rate waits for a worker that has it.
	Limits *limit.Gate
	// Lease is how long an action's worker may go without a sign of life
	// on the log before any live worker takes the action over; default
	// DefaultLease. A call in flight heartbeats every Lease/3.
	Lease time.Duration
	// PermitKeys are the public keys governance signs permits with (its
	// credential key, and earlier ones still trusted). With them, a permit
	// whose signature does not hold against one of them, or that names
	// another action, is not claimed (see permitRefusal). Without them
	// permits are not checked.
	PermitKeys []ed25519.PublicKey
	// SignedHere, when governance runs in the same process (steward
	// dev), remembers the permits it signed lately: their signatures are
	// not verified again (credential.Recent), while every other check of
	// PermitKeys stands.
	SignedHere *credential.Recent
	// RestoreCut is where the log a restore put back ends
	// (backup.ReadCut), nil if it was never restored: an action proposed
	// before it whose call may have been made after it is recorded
	// unknown, never sent again blind (restorecut.go).
	RestoreCut *backup.Cut
	// Now is the clock; time.Now by default. Tests may stop it.
	Now func() time.Time
}

// Plane is the execution plane. Its methods are safe for concurrent use.
type Plane struct {
	log *eventlog.Log
	// tasks folds the log's tasks, shared by every plane of the process
	// (Config.Tasks).
	tasks    *taskstore.Store
	logger   *slog.Logger
	cfg      Config
	breakers *breaker.Set
	// tenantHTTP calls tenants' http tools, over connections of its own
	// that obey cfg.Egress.
	tenantHTTP adapter.Adapter
	// tenantModel calls tenants' model tools, and tenantMCP their MCP
	// tools, under Egress as tenantHTTP.
	tenantModel adapter.Adapter
	tenantMCP   adapter.Adapter
	// modelFailures counts model calls' failures apart (model.go).
	modelFailures modelFailures
	// settlement settles unknown outcomes (SettleAction); registration
	// registers tools (groups.go).
	settlement   *settlement
	registration *registration
	busy         inflight
	// limits holds calls to a tool's breaker and limits, and waits arms
	// and answers the timers of waiting actions (groups.go).
	limits *limits
	waits  *waits
	// cuts keeps calls a restore may have left made from going out again
	// (restorecut.go).
	cuts *cuts
	// calls are the calls going on apart from the reactions that
	// dispatched them; Stop waits for them.
	calls sync.WaitGroup
	subs  []interface{ Stop() }
	// beforeClaim, when set, runs just before a claim is appended (an
	// ActionClaimed, or a first dispatch carrying it); tests use it to
	// make a race certain.
	beforeClaim func()
}

// Option is a test hook on a Plane; a process configures one with Config.
type Option func(*Plane)

// New returns an execution plane over log. A breaker configuration that
// does not validate is an error naming the field.
func New(log *eventlog.Log, logger *slog.Logger, cfg Config, opts ...Option) (*Plane, error) {
	if cfg.Tasks == nil {
		cfg.Tasks = taskstore.New(log)
	}
	if cfg.Consumer == "" {
		cfg.Consumer = PlaneName
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Lease < MinLease {
		return nil, errs.New(errs.Invalid, "lease %s is under %s: heartbeats come every third of it", cfg.Lease, MinLease)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.Breaker.Validate(); err != nil {
		return nil, err
	}
	if cfg.Egress == nil {
		cfg.Egress = egress.New(egress.Config{})
	}
	if cfg.Adapters.Model == nil {
		cfg.Adapters.Model = adapter.NewModel(nil)
	}
	if cfg.Adapters.MCP == nil {
		cfg.Adapters.MCP = adapter.NewMCP(nil, cfg.MCPOptions...)
	}
	p := &Plane{
		log: log, tasks: cfg.Tasks, logger: logger.With("plane", PlaneName, "worker", cfg.Worker), cfg: cfg,
		breakers:      breaker.New(cfg.Breaker),
		tenantHTTP:    adapter.NewHTTP(&http.Client{Transport: cfg.Egress.Transport()}, cfg.HTTPOptions...),
		tenantModel:   adapter.NewModel(&http.Client{Transport: cfg.Egress.Transport()}),
		tenantMCP:     adapter.NewMCP(&http.Client{Transport: cfg.Egress.Transport()}, cfg.MCPOptions...),
		modelFailures: newModelFailures(),
	}
	p.limits = &limits{waiting: p, cfg: cfg, log: log, logger: p.logger, breakers: p.breakers}
	p.waits = &waits{resuming: p, cfg: cfg, logger: p.logger, tasks: cfg.Tasks}
	p.settlement = &settlement{recording: p, cfg: cfg, log: log, tasks: cfg.Tasks}
	p.registration = &registration{cfg: cfg, log: log, logger: p.logger}
	p.cuts = &cuts{recording: p, costing: p, cfg: cfg, log: log, logger: p.logger}
	p.registration.reserve(cfg.ReservedTools...)
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

func (p *Plane) now() time.Time { return p.cfg.Now() }

// Register registers tool contract c for tenant ("" for every tenant) on
// principal's word, as ToolService.RegisterTool does (registration).
func (p *Plane) Register(ctx context.Context, tenant, principal string, c *stewardv1.ToolContract) (*stewardv1.Tool, bool, error) {
	return p.registration.Register(ctx, tenant, principal, c)
}

// RegisterFile registers the tools of a --tools file (registration).
func (p *Plane) RegisterFile(ctx context.Context, path string) error {
	return p.registration.RegisterFile(ctx, path)
}

// timerSlots is how many of its timers an execution worker handles at once.
const timerSlots = 8

// Start runs the plane's reactions, and its timers when it has them.
func (p *Plane) Start(ctx context.Context) error {
	reactions := []eventlog.Reaction{
		eventlog.On(p.execute),
		// Permits that arrived while the task was stopped wait for this,
		// or for an answer, which resumes the task as well.
		eventlog.OnRecord[*stewardv1.TaskResumed](p.resume),
		eventlog.OnRecord[*stewardv1.InputProvided](p.resume),
		eventlog.OnRecord[*stewardv1.ActionWaiting](p.waits.armWait),
		eventlog.OnRecord[*stewardv1.ActionSettled](p.waits.armWait),
		eventlog.On(p.reconcileOutcome),
		// A denial or rejection after calls that may have done the work
		// leaves the action unknown: settled like any other.
		eventlog.OnRecord[*stewardv1.ActionDenied](p.reconcileStopped),
		eventlog.OnRecord[*stewardv1.ApprovalDecided](p.reconcileStopped),
		// What a silent worker left behind.
		eventlog.OnRecord[*stewardv1.TaskStalled](p.takeOver),
		// Every event that may end a task: its waiting actions are closed.
		eventlog.OnRecord[*stewardv1.TaskCancelled](p.waits.closeWaits),
		eventlog.OnRecord[*stewardv1.TaskFailed](p.waits.closeWaits),
		eventlog.OnRecord[*stewardv1.TaskAccepted](p.waits.closeWaits),
		eventlog.OnRecord[*stewardv1.TaskProduced](p.waits.closeWaits),
	}
	sub, err := p.log.React(ctx, p.cfg.Consumer, reactions...)
	if err != nil {
		return err
	}
	p.subs = append(p.subs, sub)
	if p.cfg.Timers != nil {
		// Its timers are handled several at a time: a retry's call runs in
		// its timer's handler, and must not hold up another's takeover.
		tsub, err := p.cfg.Timers.Run(ctx, p.cfg.Consumer+"-timers", []string{timerWait, timerReconcile}, p.waits.fired, timer.Slots(timerSlots))
		if err != nil {
			p.Stop()
			return err
		}
		p.subs = append(p.subs, tsub)
	}
	return nil
}

// Stop stops the plane's reactions and timers, and waits for the calls
// they made to end and be recorded.
func (p *Plane) Stop() {
	var stopping sync.WaitGroup
	for _, s := range p.subs {
		stopping.Go(s.Stop)
	}
	stopping.Wait()
	p.subs = nil
	p.calls.Wait()
}

// Services returns the Connect services the plane serves, built with opts.
func (p *Plane) Services(opts []connect.HandlerOption) []rpc.Service {
	path, h := stewardv1connect.NewToolServiceHandler(&toolService{plane: p}, opts...)
	aPath, a := stewardv1connect.NewActionServiceHandler(&actionService{plane: p}, opts...)
	return []rpc.Service{
		{Name: stewardv1connect.ToolServiceName, Path: path, Handler: h},
		{Name: stewardv1connect.ActionServiceName, Path: aPath, Handler: a},
	}
}
