// Package state is the state plane: it projects task views from the log and
// serves them (QueryService), replays and verifies task histories for
// auditors (AuditService), shows operators the events set aside and asks
// for their replay (DeadLetterService, deadletter.go), and marks working
// tasks that have gone quiet as stalled (see watchdog.go).
//
// Where views live: in memory, rebuilt on start by an ordered consumer
// that folds every event with the same fold the control plane uses
// (pkg/task). The log is the only source of truth; keeping views in memory
// means every state-plane replica serves identical views, and "drop the
// projections and replay" is a restart with snapshots off. So that
// start-up does not grow with the log, the plane starts from a snapshot
// of its task views checked against the chain heads it claims, and folds
// only the log after it (viewsnap*.go, docs/snapshots.md); a snapshot is
// a cache of the fold, never a source of truth. An ended task keeps only
// its summary in memory once Config.EvictAfter has passed, and a read of
// the rest folds its history for that read (evict.go, docs/eviction.md).
//
// Reads are read-your-writes: GetTask first asks the log for the task's
// last sequence and waits (briefly) until the projection has applied it.
//
// It also serves a task's content — tools' results and artifacts' bytes
// (content.go) — checked against the hashes on the log, to those with a
// right to the task (access.go).
package state

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/services/state/notify"
)

// PlaneName is the state plane's name in logs.
const PlaneName = event.PlaneState

// Plane is the state plane. Its methods are safe for concurrent use.
type Plane struct {
	log *eventlog.Log
	// tasks folds the log's tasks, shared by every plane of the process
	// (Config.Tasks).
	tasks  *taskstore.Store
	logger *slog.Logger
	views  *Projection
	// objectives is the view of the objectives (objective.go).
	objectives *Objectives
	// breakers is the view of the execution workers' circuit breakers.
	breakers *Breakers
	cfg      Config
	// snap measures the snapshots of the views (viewsnap_plane.go).
	snap snapshotStats
	// looks counts the watchdog's looks at the tasks, and evictions the
	// evictor's, for tests to wait on.
	looks     atomic.Uint64
	evictions atomic.Uint64
	// cold reads what the views no longer hold whole (evict.go),
	// maxColdReads at a time (coldReads).
	cold      ColdTasks
	coldReads chan struct{}
	// archiveCursor is where the evictor's next look for archived tasks
	// starts in the views' order (dropArchived); the evictor's alone.
	archiveCursor int

	// ctx ends when the plane stops, and the projection with it.
	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
	// streams ends before the RPC server shuts down, so that open watches
	// do not hold the shutdown up.
	streams    context.Context
	endStreams context.CancelFunc
	// holdStubs, set by a test, holds the load of a snapshot's stubs
	// until it is closed.
	holdStubs chan struct{}
	// foldsToFail, set by a test, is how many folds of the evicted tasks
	// from the log fail as a read of the log would.
	foldsToFail atomic.Int32
}

// Config is what a process configures in a state plane. The zero Config
// is the default.
type Config struct {
	// Tasks is the process's store of the log's tasks (stores.Set), shared
	// by its planes; a store of the plane's own when nil.
	Tasks *taskstore.Store
	// StallCheckEvery is how often the watchdog looks for stalled tasks;
	// DefaultStallCheckEvery when not positive.
	StallCheckEvery time.Duration
	// RedriveAfter is how long a task may stay, with no event, where the
	// next step of a plane alone moves it on (pending; an action proposed,
	// evaluated, approved, permitted, claimed or revalidating) before it
	// is marked stalled and re-driven; DefaultRedriveAfter when not
	// positive. A task's own stall threshold caps it.
	RedriveAfter time.Duration
	// Notify, when set, tells webhook sinks when a person is needed; the
	// plane runs it from Start to Stop.
	Notify *notify.Notifier
	// MaxActionWait bounds how long GetAction with wait holds a call;
	// DefaultMaxActionWait when not positive.
	MaxActionWait time.Duration
	// Now is the plane's clock, which the watchdog judges quiet by;
	// time.Now when nil.
	Now func() time.Time
	// Results is the results store, where GetResult reads results too
	// large to travel inline and GetArtifactContent reads artifacts. Nil
	// serves inline results only.
	Results *action.Store
	// Requests is the request store, and Policy the store of policy
	// inputs and bundle sources: ExportBundle reads both. Nil leaves what
	// they hold out of a bundle (requests stored by reference fail it).
	Requests *action.Store
	Policy   *policystore.Store
	// Digest is what a caller who may not read a task's content sees in
	// place of a plain SHA-256 of it — a result's, an artifact's, a
	// request's (secret.Sealer.Digest, keyed: a plain hash of a short
	// result gives it away to anyone who tries guesses). Nil hides those
	// digests from them. See docs/results.md.
	Digest func(taskID, hash string) string
	// Views, when set, keeps snapshots of the task views: the plane
	// starts from the newest it can check and writes one every
	// SnapshotEvery events (DefaultSnapshotEvery when 0) or, when any
	// came, every SnapshotInterval (DefaultSnapshotInterval when not
	// positive). Nil folds the whole log at start. See docs/snapshots.md.
	Views            *ViewStore
	SnapshotEvery    uint64
	SnapshotInterval time.Duration
	// Build names this binary in the snapshots it writes; a snapshot of
	// another build is refused. Empty: the toolchain's build info, which
	// a release build (-buildvcs=false) lacks, so steward serve sets it.
	Build string
	// Archive, when set, serves the tasks archived and gone from the log
	// (ArchivedTasks; docs/archives.md).
	Archive ArchivedTasks
	// EvictAfter is how long after its last event an ended task keeps
	// its whole view in memory; then only its summary stays, and reads
	// of the rest go to Cold (evict.go, docs/capacity.md).
	// DefaultEvictAfter when 0; never when negative.
	EvictAfter time.Duration
	// Cold reads evicted tasks' histories, and receipts'; the log when
	// nil.
	Cold ColdTasks
}

// withDefaults returns c with its unset fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.StallCheckEvery <= 0 {
		c.StallCheckEvery = DefaultStallCheckEvery
	}
	if c.RedriveAfter <= 0 {
		c.RedriveAfter = DefaultRedriveAfter
	}
	if c.MaxActionWait <= 0 {
		c.MaxActionWait = DefaultMaxActionWait
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.SnapshotInterval <= 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.Build == "" {
		c.Build = build()
	}
	if c.EvictAfter == 0 {
		c.EvictAfter = DefaultEvictAfter
	}
	return c
}

// Option configures a Plane beyond its Config: what a process wires in
// rather than sets. There is none yet.
type Option func(*Plane)

// New returns a state plane over log, configured by cfg.
func New(log *eventlog.Log, logger *slog.Logger, cfg Config, opts ...Option) *Plane {
	if cfg.Tasks == nil {
		cfg.Tasks = taskstore.New(log)
	}
	ctx, cancel := context.WithCancel(context.Background())
	streams, endStreams := context.WithCancel(ctx)
	logger = logger.With("plane", PlaneName)
	p := &Plane{
		log: log, tasks: cfg.Tasks, logger: logger, views: NewProjection(logger), objectives: NewObjectives(logger), breakers: NewBreakers(), cfg: cfg.withDefaults(),
		ctx: ctx, cancel: cancel, streams: streams, endStreams: endStreams,
	}
	p.cold, p.coldReads = cfg.Cold, make(chan struct{}, maxColdReads)
	if p.cold == nil {
		p.cold = logCold{log}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Start begins projecting the log into views — from the newest snapshot
// that checks, else from the start — and returns once the views have
// caught up with the log as it was at start, so that the plane never
// serves a half-rebuilt view. Then it starts the stall watchdog and the
// snapshots.
func (p *Plane) Start(ctx context.Context) error {
	start := time.Now() // how long it took, not what the plane's clock says
	last, err := p.log.LastTaskSequenceFromEnd(ctx)
	if err != nil {
		return err
	}
	m := p.loadSnapshot(ctx, last)
	p.done.Go(func() { p.log.KeepReading(p.ctx, p.log.TracedReader(p.ctx, PlaneName, p.views)) })
	p.done.Go(func() { p.log.KeepReadingServices(p.ctx, p.breakers) })
	p.done.Go(func() { p.log.KeepReadingTypes(p.ctx, p.objectives, objectiveTypes...) })
	// A snapshot's stubs are loaded once the plane serves, not before:
	// they grow with the history, and its start must not (stubs.go).
	if m.GetStubChunks() > 0 {
		p.done.Go(func() {
			if p.views.WaitFor(p.ctx, last) != nil {
				p.views.installStubs(nil, m.CoveredSequence, nil) // stopping: let the reads waiting go
				return
			}
			p.loadStubs(p.ctx, m)
		})
	}
	if err := p.views.WaitFor(ctx, last); err != nil {
		return err
	}
	p.logger.Info("views rebuilt from the log", "events", last, "from_snapshot", m != nil, "took", time.Since(start).Round(time.Millisecond))
	p.done.Go(func() { p.watchStalls(p.ctx) })
	p.done.Go(func() { p.keepEvicting(p.ctx) })
	if p.cfg.Views != nil {
		p.done.Go(func() { p.keepSnapshotting(p.ctx) })
	}
	if p.cfg.Notify != nil {
		p.done.Go(func() { p.cfg.Notify.Run(p.ctx) })
	}
	return nil
}

// EndStreams ends every open watch; call it before shutting the RPC server
// down.
func (p *Plane) EndStreams() { p.endStreams() }

// Stop ends the projection, the watchdog and every open watch.
func (p *Plane) Stop() {
	p.cancel()
	p.done.Wait()
}

// Views returns the plane's projection, for tests and in-process callers.
func (p *Plane) Views() *Projection { return p.views }

// Services returns the Connect services the plane serves, built with opts.
func (p *Plane) Services(opts []connect.HandlerOption) []rpc.Service {
	qPath, q := stewardv1connect.NewQueryServiceHandler(&queryService{plane: p}, opts...)
	aPath, a := stewardv1connect.NewAuditServiceHandler(&auditService{plane: p}, opts...)
	dPath, d := stewardv1connect.NewDeadLetterServiceHandler(&deadLetterService{plane: p}, opts...)
	return []rpc.Service{
		{Name: stewardv1connect.QueryServiceName, Path: qPath, Handler: q},
		{Name: stewardv1connect.AuditServiceName, Path: aPath, Handler: a},
		{Name: stewardv1connect.DeadLetterServiceName, Path: dPath, Handler: d},
	}
}
