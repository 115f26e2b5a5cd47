// Package control is the control plane: it accepts task commands over
// TaskService, checks each against the task folded from its events, and
// appends the events that record it. It also starts created tasks, through
// a durable reaction on the log; drives the compensation of a failed or
// cancelled task, action by action; answers an action that failed for
// good as the contract's recovery policy says — proposing it again or
// escalating to a person (recovery.go); stops a task that keeps failing
// the same way, or proposes past its action cap, asking for help; and runs
// a task's plan, step by step, once governance lets it (plandriver).
// It records a task's artifacts, evaluates
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
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/timer"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/control/plandriver"
)

// PlaneName is the control plane's name in events and consumer names.
const PlaneName = event.PlaneControl

// Config is what a control plane needs besides the log.
type Config struct {
	// Tasks is the process's store of the log's tasks (stores.Set), shared
	// by its planes; a store of the plane's own when nil.
	Tasks *taskstore.Store
	// Tools and Requests let the plane take proposed actions: the tool
	// registry checks them and the request store keeps them. With them the
	// plane also runs the compensation driver, which proposes actions of
	// its own.
	Tools    *toolreg.Registry
	Requests *action.Store
	// Results is the store of tool results (action.ResultBucket). The
	// compensation driver hands each compensating tool the result of the
	// call it undoes, and waits (retrying) for this store while a task it
	// compensates has such a result; SubmitArtifact keeps inline content
	// in it.
	Results *action.Store
	// Secrets commits to and seals the values of parameters a tool's
	// schema marks secret (docs/secrets.md). Without it a proposal to such
	// a tool is refused.
	Secrets *secret.Sealer
	// MaxInlineArtifact and MaxReferencedArtifact are the largest artifact
	// SubmitArtifact takes inline (stored in Results) and by reference;
	// zero is the default (DefaultMaxInlineArtifact,
	// DefaultMaxReferencedArtifact). Inline content travels in one NATS
	// message, so its limit must stay under the server's max_payload, and
	// the request under the RPC edge's rpc.MaxRequestBytes.
	MaxInlineArtifact, MaxReferencedArtifact int64
	// Timers end the wait steps of plans (plandriver/wait.go); without them a
	// wait that has not ended yet waits, retrying, for a plane that has
	// them.
	Timers *timer.Timers
	// Quotas bound what one principal and one tenant may hold
	// (docs/quotas.md); zero fields take DefaultQuotas.
	Quotas Quotas
	// Outcomes, when the process runs a state plane too, answers a
	// ProposeAction with wait from that plane's views (state.Plane's
	// WaitAction). Without it (a control plane alone) such a call is
	// answered at once, as without wait, and the caller waits with
	// GetAction (docs/performance.md, "One round trip").
	Outcomes Outcomes
	// Now is the clock; time.Now by default. Tests may stop it.
	Now func() time.Time
}

// Outcomes waits for an action to stop moving and reads it, as GetAction
// with wait does, for the caller in ctx. seen is the sequence of the task
// this plane last wrote or read with the action in it: the views need
// reach only that to read it, and the log need not be asked for the
// task's last event.
type Outcomes interface {
	WaitAction(ctx context.Context, taskID, actionID string, seen uint64) (*stewardv1.GetActionResponse, error)
}

// TimerConsumer is the control plane's consumer of its timers.
const TimerConsumer = "control-timers"

// Plane is the control plane. Its methods are safe for concurrent use.
type Plane struct {
	log *eventlog.Log
	// tasks folds the log's tasks, shared by every plane of the process
	// (Config.Tasks).
	tasks    *taskstore.Store
	logger   *slog.Logger
	tools    *toolreg.Registry
	requests *action.Store
	secrets  *secret.Sealer
	timers   *timer.Timers
	now      func() time.Time
	sub      eventlog.Subscription
	timerSub timer.Subscription
	// scheduleSub fires schedules (schedule_fire.go); startTicks ticks
	// them once at start (schedule_start.go).
	scheduleSub timer.Subscription
	startTicks  startTicks
	// schedules makes tasks on schedules (schedule.go); runMade, a test
	// hook, runs between a run's creation and its firing's record.
	schedules *schedules
	rollouts  *rollouts // rollout.go
	runMade   func(scheduleID string)
	// planLoaded, a test hook, runs between the template plan reaction's
	// read of a run and its submission (BeforeTemplatePlan).
	planLoaded func(taskID string)
	// quota holds commands to the quotas, over the usage they bound
	// (quota.go, usage.go); stopUsage ends usage's reader.
	quota     *gate
	usage     *usage
	stopUsage context.CancelFunc
	// stepProposed, a test hook, runs between a plan step's proposal and
	// the record that the step runs it, or between a sub_task step's
	// record and its delegation (AfterStepProposal).
	stepProposed func(step string) error
	// startWait bounds the wait for a pending task (loadStarted);
	// startWaiting, a test hook, runs as the wait begins.
	startWait    time.Duration
	startWaiting func(taskID string)
	// acceptance takes a task's artifacts, production and review
	// (acceptance.go).
	acceptance *acceptance
	// delegation makes sub-tasks and lends them budget (delegation.go).
	delegation *delegation
	// objectives are the commands on objectives (objective.go).
	objectives objectives
	// decisions keeps tasks' model decisions and context ledgers
	// (decision.go).
	decisions *decisions
	// heartbeats takes the agents' heartbeats (liveness.go).
	heartbeats *heartbeats
	// progress takes the agents' progress reports (milestone.go).
	progress *progress
	// observer records the decisions behind the model calls Steward
	// makes itself (observe.go).
	observer *observer
	// plans runs the plans of tasks (plandriver; plan_host.go).
	plans *plandriver.Driver
	// criteria keeps the acceptance criteria compiled (criteria.go).
	criteria *programCache
	// recovery answers failures, compensates and re-drives stalled tasks
	// (recovery.go).
	recovery *recovery
	// outcomes answers proposals made with wait (Config.Outcomes).
	outcomes Outcomes
}

// Option is a test hook on a Plane; a process configures one with Config.
type Option func(*Plane)

// AfterStepProposal makes fn run after each proposal of a plan step's
// action, before the record that the step runs it, and before each
// delegation of a sub_task step's sub-task (each item's, for a foreach),
// after that record: an error from fn fails the reaction there, as a
// crash would, and the event is delivered again.
func AfterStepProposal(fn func(step string) error) Option {
	return func(p *Plane) { p.stepProposed = fn }
}

// AfterRunMade makes fn run after each schedule run is created, before
// its firing is recorded: where a pause, a crash or another replica may
// come between the two.
func AfterRunMade(fn func(scheduleID string)) Option {
	return func(p *Plane) { p.runMade = fn }
}

// BeforeTemplatePlan makes fn run after the template plan reaction read
// run taskID as taking the plan, before it submits it: where the run's
// agent may submit a plan of its own.
func BeforeTemplatePlan(fn func(taskID string)) Option {
	return func(p *Plane) { p.planLoaded = fn }
}

// StartWait sets how long a command that needs a running task waits for
// a pending one to start (startWait by default), and calls waiting, if
// not nil, as such a wait begins.
func StartWait(d time.Duration, waiting func(taskID string)) Option {
	return func(p *Plane) { p.startWait, p.startWaiting = d, waiting }
}

// New returns a control plane over log, configured by cfg.
func New(log *eventlog.Log, logger *slog.Logger, cfg Config, opts ...Option) *Plane {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxInlineArtifact <= 0 {
		cfg.MaxInlineArtifact = DefaultMaxInlineArtifact
	}
	if cfg.MaxReferencedArtifact <= 0 {
		cfg.MaxReferencedArtifact = DefaultMaxReferencedArtifact
	}
	if cfg.Tasks == nil {
		cfg.Tasks = taskstore.New(log)
	}
	usageCtx, stopUsage := context.WithCancel(context.Background())
	p := &Plane{
		log: log, tasks: cfg.Tasks, logger: logger.With("plane", PlaneName),
		usage: newUsage(log, usageCtx), stopUsage: stopUsage,
		tools: cfg.Tools, requests: cfg.Requests, secrets: cfg.Secrets, timers: cfg.Timers, now: cfg.Now,
		startWait: startWait, criteria: newProgramCache(), outcomes: cfg.Outcomes,
	}
	p.quota = &gate{usage: p.usage, quotas: cfg.Quotas.withDefaults()}
	p.schedules = newSchedules(p)
	p.rollouts = newRollouts(p)
	for _, o := range opts {
		o(p)
	}
	p.acceptance = &acceptance{
		commands: p, quota: p.quota, log: log, tasks: cfg.Tasks, results: cfg.Results, now: cfg.Now,
		criteria:  p.criteria,
		maxInline: cfg.MaxInlineArtifact, maxReferenced: cfg.MaxReferencedArtifact,
	}
	p.objectives = objectives{Plane: p, cache: newObjectiveCache(log)}
	p.delegation = &delegation{making: p, log: log, tasks: cfg.Tasks, now: cfg.Now, requests: cfg.Requests, results: cfg.Results}
	p.decisions = &decisions{commands: p, tasks: cfg.Tasks, now: cfg.Now}
	p.heartbeats = &heartbeats{commands: p, now: cfg.Now}
	p.progress = &progress{commands: p}
	p.observer = &observer{commands: p, log: log, tasks: cfg.Tasks, tools: cfg.Tools, requests: cfg.Requests, results: cfg.Results}
	p.plans = plandriver.New(planHost{p}, plandriver.Config{
		Log: log, Tasks: cfg.Tasks, Timers: cfg.Timers, Logger: p.logger, Now: cfg.Now, StepProposed: p.stepProposed,
	})
	p.recovery = &recovery{
		log: log, tasks: cfg.Tasks, logger: p.logger, tools: cfg.Tools, requests: cfg.Requests, results: cfg.Results,
		plane: p, start: p.startIfPending, drivePlan: p.plans.Drive,
	}
	return p
}

// event is the event that records payload under meta, at the plane's
// clock's time unless meta says otherwise.
func (p *Plane) event(meta event.Meta, payload event.Payload) (*stewardv1.Event, error) {
	if meta.Time.IsZero() {
		meta.Time = p.now()
	}
	return event.New(meta, payload)
}

// Start runs the plane's reactions, starts reading the usage its quotas
// bound and, with timers, ends the waits of plans.
func (p *Plane) Start(ctx context.Context) error {
	if p.timers != nil && p.recovery.takesActions() {
		sub, err := p.timers.Run(ctx, TimerConsumer, []string{plandriver.WaitTimerKind}, p.plans.OnWait)
		if err != nil {
			return err
		}
		p.timerSub = sub
	}
	if p.timers != nil {
		sub, err := p.timers.Run(ctx, ScheduleConsumer, []string{ScheduleTimerKind}, p.schedules.onScheduleTimer)
		if err != nil {
			return err
		}
		p.scheduleSub = sub
	}
	p.usage.read()
	sub, err := p.log.React(ctx, PlaneName, p.reactions()...)
	if err != nil {
		return err
	}
	p.sub = sub
	if p.timers != nil {
		// Once its quotas read usage: a tick may make runs.
		p.schedules.tickAll(ctx, &p.startTicks)
	}
	return nil
}

// Stop stops the plane's reactions and the reader of its quotas' usage;
// RPCs but those that quotas bound keep working until the server stops.
func (p *Plane) Stop() {
	p.startTicks.wait() // before the usage its runs' quotas read
	p.stopUsage()
	p.usage.reading.Wait()
	if p.sub != nil {
		p.sub.Stop()
	}
	if p.timerSub != nil {
		p.timerSub.Stop()
	}
	if p.scheduleSub != nil {
		p.scheduleSub.Stop()
	}
}

// Services returns the Connect services the plane serves, built with opts.
func (p *Plane) Services(opts []connect.HandlerOption) []rpc.Service {
	path, h := stewardv1connect.NewTaskServiceHandler(&taskService{plane: p}, opts...)
	spath, sh := stewardv1connect.NewScheduleServiceHandler(&scheduleService{plane: p}, opts...)
	rpath, rh := stewardv1connect.NewRolloutServiceHandler(&rolloutService{plane: p}, opts...)
	return []rpc.Service{{Name: stewardv1connect.TaskServiceName, Path: path, Handler: h},
		{Name: stewardv1connect.ScheduleServiceName, Path: spath, Handler: sh},
		{Name: stewardv1connect.RolloutServiceName, Path: rpath, Handler: rh}}
}
