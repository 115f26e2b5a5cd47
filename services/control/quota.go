package control

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control/plandriver"
)

// Quotas bound what one principal, and one tenant, may hold at once
// (docs/quotas.md). Zero is the default (DefaultQuotas).
type Quotas struct {
	// RunningTasksPerPrincipal and RunningTasksPerTenant bound the tasks
	// not ended (CreateTask, DelegateTask, a plan's sub-tasks, admitted at
	// SubmitPlan) that one principal created, and that one tenant holds.
	RunningTasksPerPrincipal, RunningTasksPerTenant int64
	// PlanBytesPerPrincipal and PlanBytesPerTenant bound the bytes of the
	// current plans of those running tasks (SubmitPlan); a revision
	// replaces its task's share, and an ended task frees it.
	PlanBytesPerPrincipal, PlanBytesPerTenant int64
	// ContentBytesPerPrincipal and ContentBytesPerTenant bound the
	// artifact content one principal, and one tenant, has added to
	// Steward's store (SubmitArtifact), each content charged once to its
	// first submitter. Stored content is kept, so nothing frees it.
	ContentBytesPerPrincipal, ContentBytesPerTenant int64
}

// DefaultQuotas are the quotas of a plane configured with none: room for
// a busy team's agents on one tenant, far under what one process holds.
var DefaultQuotas = Quotas{
	RunningTasksPerPrincipal: 1000,
	RunningTasksPerTenant:    10000,
	PlanBytesPerPrincipal:    256 << 20,
	PlanBytesPerTenant:       1 << 30,
	ContentBytesPerPrincipal: 1 << 30,
	ContentBytesPerTenant:    10 << 30,
}

// withDefaults returns q with every zero replaced by its default.
func (q Quotas) withDefaults() Quotas {
	or := func(v, d int64) int64 {
		if v <= 0 {
			return d
		}
		return v
	}
	d := DefaultQuotas
	return Quotas{
		RunningTasksPerPrincipal: or(q.RunningTasksPerPrincipal, d.RunningTasksPerPrincipal),
		RunningTasksPerTenant:    or(q.RunningTasksPerTenant, d.RunningTasksPerTenant),
		PlanBytesPerPrincipal:    or(q.PlanBytesPerPrincipal, d.PlanBytesPerPrincipal),
		PlanBytesPerTenant:       or(q.PlanBytesPerTenant, d.PlanBytesPerTenant),
		ContentBytesPerPrincipal: or(q.ContentBytesPerPrincipal, d.ContentBytesPerPrincipal),
		ContentBytesPerTenant:    or(q.ContentBytesPerTenant, d.ContentBytesPerTenant),
	}
}

// quota is one bound on one dimension of a tally, by its documented name.
type quota struct {
	name    string
	limit   int64
	perWhat string // "principal" or "tenant"
	of      func(tally) int64
}

func (q Quotas) bounds() []quota {
	running := func(t tally) int64 { return t.running }
	plans := func(t tally) int64 { return t.planBytes }
	content := func(t tally) int64 { return t.contentBytes }
	return []quota{
		{"running tasks per principal", q.RunningTasksPerPrincipal, "principal", running},
		{"running tasks per tenant", q.RunningTasksPerTenant, "tenant", running},
		{"plan bytes per principal", q.PlanBytesPerPrincipal, "principal", plans},
		{"plan bytes per tenant", q.PlanBytesPerTenant, "tenant", plans},
		{"stored content bytes per principal", q.ContentBytesPerPrincipal, "principal", content},
		{"stored content bytes per tenant", q.ContentBytesPerTenant, "tenant", content},
	}
}

// gate holds commands to the quotas (docs/quotas.md): each is
// admitted against usage as the log has it now and the commands admitted
// before it, or refused before it records anything.
type gate struct {
	usage  *usage
	quotas Quotas
}

// admit checks that o, and o's tenant, may take d more, counting
// everything recorded on the log now and every command admitted here
// and not yet read back; if so it holds d for the command until done
// is called with the sequence of the event that records it (0: nothing
// was recorded). A refusal is QuotaExceeded naming the quota. This is a
// read and an entry in memory: nothing is written, so a refused command
// spends nothing, and a crash loses nothing but the entry.
func (q *gate) admit(ctx context.Context, o owner, d tally) (done func(seq uint64), err error) {
	return q.admitCreate(ctx, o, d, "")
}

// admitCreate is admit for a command that creates task taskID (when not
// ""): its hold ends when usage reads the task's creation, even before
// done is told its sequence.
func (q *gate) admitCreate(ctx context.Context, o owner, d tally, taskID string) (done func(seq uint64), err error) {
	if err := q.usage.catchUp(ctx); err != nil {
		return nil, err
	}
	q.usage.mu.Lock()
	defer q.usage.mu.Unlock()
	return q.usage.admit(o, d, q.quotas, taskID)
}

// admitOn is admit for a command on running task taskID: charge returns
// whom it is counted against and what it adds to what the task holds now
// (it runs under usage's lock). A task usage does not know as running has
// ended (or does not exist): the command is refused, as the task's fold
// would refuse its event, before it stores or records anything.
func (q *gate) admitOn(ctx context.Context, taskID string, charge func(*usage, running) (owner, tally)) (done func(seq uint64), err error) {
	if err := q.usage.catchUp(ctx); err != nil {
		return nil, err
	}
	q.usage.mu.Lock()
	defer q.usage.mu.Unlock()
	r, ok := q.usage.tasks[taskID]
	if !ok {
		return nil, errs.New(errs.FailedPrecondition, "task %s is not running: it has ended", taskID)
	}
	o, d := charge(q.usage, r)
	return q.usage.admit(o, d, q.quotas, "")
}

// admitPlan admits plan pl for task t, submitted by principal: its bytes,
// counted against t's owner in place of t's current plan, and the most
// sub-tasks its steps may delegate at once (subTasksOf), counted against
// principal, as whom they are delegated, and t's tenant. A plan's
// delegations are not refused when they come (a plan is not stopped
// half-way), so its sub-tasks are admitted with it.
func (q *gate) admitPlan(ctx context.Context, t *stewardv1.Task, principal string, pl *stewardv1.Plan) (done func(seq uint64), err error) {
	size := int64(proto.Size(pl))
	bytes, err := q.admitOn(ctx, t.Contract.GetTaskId(), func(_ *usage, r running) (owner, tally) {
		return r.owner, tally{planBytes: size - r.planBytes}
	})
	n := subTasksOf(pl)
	if err != nil || n == 0 {
		return bytes, err
	}
	subs, err := q.admit(ctx, owner{tenant: t.GetTenant(), principal: principal}, tally{running: n})
	if err != nil {
		bytes(0)
		return nil, err
	}
	return func(seq uint64) { bytes(seq); subs(seq) }, nil
}

// subTasksOf returns the most sub-tasks pl's steps may have running at
// once: one for each sub_task step, max_items for each foreach of
// sub-tasks. A sub-task's own plan is admitted when it is submitted.
func subTasksOf(pl *stewardv1.Plan) int64 {
	var n int64
	for _, s := range pl.GetSteps() {
		n += plandriver.What(s).MostSubTasks()
	}
	return n
}

// admit is gate.admit once caught up; the caller holds mu.
func (u *usage) admit(o owner, d tally, quotas Quotas, taskID string) (done func(seq uint64), err error) {
	mine, tenants := u.held(o), u.held(o.whole())
	for _, q := range quotas.bounds() {
		have := mine
		if q.perWhat == "tenant" {
			have = tenants
		}
		if add := q.of(d); add > 0 && q.of(have)+add > q.limit {
			return nil, quotaReached(q, o, q.of(have), add)
		}
	}
	// Only growth is held: a shrink counts once it is on the log.
	d = tally{running: max(d.running, 0), planBytes: max(d.planBytes, 0), contentBytes: max(d.contentBytes, 0)}
	h := &hold{owner: o, d: d, task: taskID}
	u.holds[h] = struct{}{}
	return func(seq uint64) {
		if seq == 0 {
			u.release(h)
			return
		}
		u.keep(h, seq)
	}, nil
}

func quotaReached(q quota, o owner, have, add int64) error {
	who := "principal " + errs.Quote(o.principal)
	if q.perWhat == "tenant" {
		who = "tenant " + errs.Quote(o.tenant)
		if o.tenant == "" {
			who = "the default tenant"
		}
	}
	return errs.New(errs.QuotaExceeded, "quota %q (%d) reached: %s holds %d, and this request would add %d", q.name, q.limit, who, have, add)
}

var _ eventlog.Reader = (*usage)(nil)
