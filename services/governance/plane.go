// Package governance is the governance plane. It reacts to proposed
// actions: it evaluates the OPA policy bundle into a PolicySnapshot and then
// issues a one-time ActionPermit, denies the action, or asks a person to
// approve it; an allow that nothing holds back is recorded in one event,
// the permit carrying its snapshot (snapshot.go). People decide through GovernanceService; a decision binds to
// the exact action hash, and before a permit follows an approval, policy
// and the task's state are checked again. With durable timers
// (Config.Timers) an approval that waits too long reminds its approvers
// and then suspends its task, a question likewise (inputladder.go), a
// task is suspended at its deadline (deadline.go), and one whose stall
// mark stands (stall.go). With a signer (Config.Signer) it issues every
// task a signed credential, checks it before policy and before every
// permit, and revokes it on an operator's word (credential.go); with the
// same key it signs every permit (permit.go) and every approval decision
// (approve.go), and permits nothing after a decision it cannot verify. It
// judges each plan version whole by the bundle's plan query, and may ask
// for an approval of the plan bound to its hash (plan.go,
// planapproval.go). Its clock is Config.Now.
//
// Every reaction is idempotent: its events have ids derived from the
// action, and a step already on the log is reused, never recomputed.
package governance

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/timer"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/governance/policy"
)

// PlaneName is the governance plane's name in events and consumer names.
const PlaneName = event.PlaneGovernance

// PolicyReloadInterval is how often the policy directory is checked for
// changes.
const PolicyReloadInterval = time.Second

// Plane is the governance plane. Its methods are safe for concurrent use.
type Plane struct {
	log *eventlog.Log
	// tasks folds the log's tasks, shared by every plane of the process
	// (Config.Tasks).
	tasks     *taskstore.Store
	logger    *slog.Logger
	engine    *policy.Engine
	kept      keptSources
	tools     *toolreg.Registry
	store     *action.Store
	approvals *Approvals
	now       func() time.Time

	// timers is nil when approvals wait without reminders or suspension.
	timers       *timer.Timers
	notify       Notifier
	notifyBudget BudgetNotifier
	// evaluated, when set, is told of every policy evaluation (a test's
	// count).
	evaluated func()

	// signer is nil when the plane issues and checks no credentials.
	signer        *credential.Signer
	credentialTTL time.Duration
	// permitTTL is how long a permit may be used after it is issued.
	permitTTL time.Duration
	// trusted are the keys a task's credential may be signed with: the
	// signer's and any earlier ones (Config.TrustedKeys); verified
	// remembers the credentials that checked out.
	trusted []ed25519.PublicKey
	// clock keeps the approval and deadline timers (clock.go).
	clock *clock
	// credentials issues, checks, renews and revokes task credentials
	// (credentials.go).
	credentials *credentials
	// toolFacts are the tool contracts as policy reads them.
	toolFacts toolFactsCache
	// taskFacts are the tasks as policy reads them.
	taskFacts taskFactsCache
	// inputs makes the rest of each action's policy input.
	inputs actionInputs
	// digest keys the hashes shown to who may not read a task's content
	// (Config.Digest).
	digest func(taskID, hash string) string

	sub      eventlog.Subscription
	timerSub timer.Subscription
	cancel   context.CancelFunc
	done     sync.WaitGroup
}

// Config is what a process configures a governance plane with.
type Config struct {
	// Tasks is the process's store of the log's tasks (stores.Set), shared
	// by its planes; a store of the plane's own when nil.
	Tasks *taskstore.Store
	// Engine evaluates the policy bundle.
	Engine *policy.Engine
	// Tools has the tool contracts; Requests the canonical requests.
	Tools    *toolreg.Registry
	Requests *action.Store
	// Timers, when set, make every approval the plane asks for remind its
	// approvers after the task's approval_remind_after and suspend the task
	// after approval_suspend_after, unless it is decided first, make every
	// question climb its ladder likewise (inputladder.go), suspend a task
	// at work when its deadline passes, and suspend one whose stall mark
	// stands for stall_suspend_after. Without them approvals wait as long
	// as it takes, a deadline only ends the credential, and a stalled task
	// stays marked.
	Timers *timer.Timers
	// Signer, when set, makes the plane issue, sign and check task
	// credentials. Without it the plane issues none and checks none.
	Signer *credential.Signer
	// TrustedKeys are keys that credentials signed earlier may be signed
	// with: after a key rotation, the old key, so that tasks issued under
	// it keep working. The signer's own key is always trusted.
	TrustedKeys []ed25519.PublicKey
	// CredentialTTL is how long a credential lasts when its task's
	// deadline does not end it sooner; zero or less means
	// credential.DefaultTTL.
	CredentialTTL time.Duration
	// PermitTTL is how long a permit may be used after it is issued; zero
	// or less means DefaultPermitTTL. A permit past it is not used: its
	// action is revalidated.
	PermitTTL time.Duration
	// Now is the plane's clock: when credentials and permits are issued
	// and expire, how long an approval waited. Default time.Now.
	Now func() time.Time
	// Policy, when set, keeps every policy input and the sources of every
	// bundle revision that decided one, for auditors (keep.go).
	Policy *policystore.Store
	// Digest is what ListApprovals and GetApproval show, in place of an
	// action hash, to a caller who may neither read the task's content nor
	// decide the approval (secret.Sealer.Digest, keyed); nil hides it. See
	// docs/results.md.
	Digest func(taskID, hash string) string
}

// Option sets a hook on a Plane.
type Option func(*Plane)

// WithNotifier sets what is told about an approval that is still waiting
// at its reminder; the default logs a warning.
func WithNotifier(n Notifier) Option {
	return func(p *Plane) {
		if n != nil {
			p.notify = n
		}
	}
}

// WithEvaluationHook sets a function called after every policy
// evaluation, for tests to count them.
func WithEvaluationHook(f func()) Option { return func(p *Plane) { p.evaluated = f } }

// DefaultPermitTTL is how long a permit may be used after it is issued,
// unless Config.PermitTTL says otherwise.
const DefaultPermitTTL = 10 * time.Minute

// New returns a governance plane on log configured by cfg.
func New(log *eventlog.Log, logger *slog.Logger, cfg Config, opts ...Option) *Plane {
	if cfg.Tasks == nil {
		cfg.Tasks = taskstore.New(log)
	}
	logger = logger.With("plane", PlaneName)
	p := &Plane{
		log: log, tasks: cfg.Tasks, logger: logger, engine: cfg.Engine, tools: cfg.Tools, store: cfg.Requests, approvals: NewApprovals(logger),
		now: cfg.Now, timers: cfg.Timers, signer: cfg.Signer, trusted: cfg.TrustedKeys,
		credentialTTL: cfg.CredentialTTL, permitTTL: cfg.PermitTTL, digest: cfg.Digest,
		kept: keptSources{store: cfg.Policy},
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.credentialTTL <= 0 {
		p.credentialTTL = credential.DefaultTTL
	}
	if p.permitTTL <= 0 {
		p.permitTTL = DefaultPermitTTL
	}
	p.notifyBudget = p.logBudgetAlert
	for _, o := range opts {
		o(p)
	}
	p.clock = &clock{tasks: cfg.Tasks, logger: logger, timers: p.timers, now: p.now, notify: p.notify}
	if p.clock.notify == nil {
		p.clock.notify = p.clock.logReminder
	}
	p.credentials = &credentials{
		denying: p, log: log, tasks: cfg.Tasks, logger: logger, tools: cfg.Tools, approvals: p.approvals,
		now: p.now, signer: p.signer, ttl: p.credentialTTL, trusted: p.trusted,
	}
	return p
}

// Start rebuilds the approvals index, watches the policy directory, and
// runs the plane's reactions and, with timers, the approval timers.
func (p *Plane) Start(ctx context.Context) error {
	bg, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.done.Go(func() { p.engine.Watch(bg, PolicyReloadInterval, p.logger) })
	p.done.Go(func() { p.log.KeepReadingTypes(bg, p.approvals, approvalTypes...) })
	if err := p.approvals.Sync(ctx, p.log); err != nil {
		return err
	}
	reactions := []eventlog.Reaction{
		eventlog.On(p.judge),
		eventlog.On(p.afterDecision),
		// Plans: each version judged whole (plan.go, planapproval.go).
		eventlog.On(p.judgePlan),
		// Revisions of a task's contract, judged before they take effect
		// (revision.go).
		eventlog.On(p.judgeRevision),
		// A permit that may not be used as it is: decide again.
		eventlog.On(p.revalidate),
		// The budget guard.
		eventlog.OnRecord[*stewardv1.BudgetConsumed](p.guardBudget),
		eventlog.OnRecord[*stewardv1.ActionOutcomeRecorded](p.guardBudget),
		eventlog.OnRecord[*stewardv1.ActionDenied](p.guardBudget), // on revalidation, with the calls' cost
		eventlog.OnRecord[*stewardv1.BudgetRaised](p.guardBudget),
		eventlog.OnRecord[*stewardv1.DecisionRecorded](p.guardBudget), // a reported model call's cost
		// Credentials.
		eventlog.OnRecord[*stewardv1.TaskCreated](p.credentials.issueOnCreate),
		eventlog.OnRecord[*stewardv1.CredentialRevoked](p.credentials.closeApprovals),
		eventlog.OnRecord[*stewardv1.ScheduleCreated](p.credentials.issueOnSchedule),
		eventlog.OnRecord[*stewardv1.ScheduleCredentialRevoked](p.credentials.closeApprovals),
		// A stall mark: what waits on governance alone, decided again
		// (redrive.go).
		eventlog.On(p.redrive),
	}
	if p.timers != nil {
		reactions = append(reactions,
			eventlog.On(p.clock.armOnRequest),
			// A suspension that came due while the task was paused. An
			// answer resumes a task as a resume does, and is treated alike.
			eventlog.OnRecord[*stewardv1.TaskResumed](p.clock.suspendOverdue),
			eventlog.OnRecord[*stewardv1.InputProvided](p.clock.suspendOverdue),
			// Deadlines (deadline.go): a timer at each, and a task back
			// at work past its deadline is stopped again.
			eventlog.OnRecord[*stewardv1.TaskCreated](p.clock.armDeadline),
			eventlog.OnRecord[*stewardv1.DeadlineExtended](p.clock.armDeadline),
			// A start too: a task paused before it started is resumed
			// to pending, which the resume's reaction leaves alone.
			eventlog.OnRecord[*stewardv1.TaskStarted](p.clock.suspendPastDeadline),
			eventlog.OnRecord[*stewardv1.TaskResumed](p.clock.suspendPastDeadline),
			eventlog.OnRecord[*stewardv1.InputProvided](p.clock.suspendPastDeadline),
			eventlog.OnRecord[*stewardv1.TaskReturned](p.clock.suspendPastDeadline),
			eventlog.OnRecord[*stewardv1.TaskProduced](p.clock.suspendPastDeadline),
			// The agent's liveness ladder (liveness.go), from each start
			// or return to work.
			eventlog.OnRecord[*stewardv1.TaskStarted](p.clock.armAgent),
			eventlog.OnRecord[*stewardv1.TaskResumed](p.clock.armAgent),
			eventlog.OnRecord[*stewardv1.InputProvided](p.clock.armAgent),
			// A stall mark that stands suspends its task (stall.go).
			eventlog.OnRecord[*stewardv1.TaskStalled](p.clock.armStall),
			// Questions that wait (inputladder.go).
			eventlog.OnRecord[*stewardv1.TaskNeedsInput](p.clock.armInput),
			eventlog.OnRecord[*stewardv1.TaskResumed](p.clock.armInputOnResume))
		sub, err := p.timers.Run(bg, TimerConsumer, []string{ApprovalTimerKind, DeadlineTimerKind, AgentTimerKind, StallTimerKind, InputTimerKind}, p.clock.onTimer)
		if err != nil {
			return err
		}
		p.timerSub = sub
		// Approvals asked for before timers were configured, or whose
		// reaction was missed, get theirs now; setting one again is a
		// no-op.
		pending := p.approvals.List("", true)
		p.done.Go(func() { p.clock.armPending(bg, pending) })
	}
	sub, err := p.log.React(ctx, PlaneName, reactions...)
	if err != nil {
		return err
	}
	p.sub = sub
	return nil
}

// Stop stops the reactions, the timers, the policy watch and the
// approvals index.
func (p *Plane) Stop() {
	if p.timerSub != nil {
		p.timerSub.Stop()
	}
	if p.sub != nil {
		p.sub.Stop()
	}
	if p.cancel != nil {
		p.cancel()
		p.done.Wait()
	}
}

// Services returns the Connect services the plane serves, built with opts.
func (p *Plane) Services(opts []connect.HandlerOption) []rpc.Service {
	path, h := stewardv1connect.NewGovernanceServiceHandler(&governanceService{plane: p}, opts...)
	return []rpc.Service{{Name: stewardv1connect.GovernanceServiceName, Path: path, Handler: h}}
}

// Approvals returns the plane's index of approvals, as ListApprovals and
// GetApproval read it.
func (p *Plane) Approvals() *Approvals { return p.approvals }
