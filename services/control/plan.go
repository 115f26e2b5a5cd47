package control

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/toolpin"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/control/plandriver"
)

// SubmitPlan records a plan, or a new version of one, for a running task
// (docs/plans.md). The plan is checked whole before anything is recorded:
// pkg/plan.Validate, against the tools the task's contract and credential
// allow and the tools registered as the task sees them (toolFor); then
// what only the control plane can check — each milestone is one of the
// contract's, and each sub-task's contract is one DelegateTask would take
// from this task. A refusal is InvalidArgument naming the field
// (plan.steps[2].sub_task.contract.scopes[0]).
//
// Versions only go up. The same version again with the same plan (by
// pkg/plan.Hash) is answered with the task as it is, created false, so a
// retry is safe with or without a request id: the event's id derives from
// the task and the version, and nothing is appended twice. The same
// version with another plan is AlreadyExists, as a proposal id reused for
// another request is; a lower version is FailedPrecondition. A revision
// records what it did to the version it replaces (pkg/plan.Diff).
func (p *Plane) SubmitPlan(ctx context.Context, principal string, req *stewardv1.SubmitPlanRequest) (_ *stewardv1.Task, created bool, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, ""); err != nil {
		return nil, false, err
	}
	if req.Plan == nil {
		return nil, false, errs.Field("plan", "is required")
	}
	t, history, err := p.loadStarted(ctx, req.TaskId)
	if err != nil {
		return nil, false, err
	}
	// A retry is answered before the plan is checked again: what the task
	// may call can have changed since, and the plan is recorded already.
	id := event.ID(req.TaskId, event.TypePlanSubmitted, strconv.FormatUint(uint64(req.Plan.Version), 10))
	hash, herr := plan.Hash(req.Plan)
	if history.Has(id) {
		return p.recordedPlan(ctx, t, req.Plan.Version, id, hash)
	}
	if err := takesPlans(p.tools); err != nil {
		return nil, false, err
	}
	if err := p.credentialInForce(ctx, t, p.now()); err != nil {
		return nil, false, err
	}
	if err := p.checkPlan(ctx, t, principal, req.Plan, planTools(t)); err != nil {
		return nil, false, err
	}
	if herr != nil { // Validate refuses what has no hash; this is a bug
		return nil, false, herr
	}
	// From here on the plan is as recorded: its secret literals concealed
	// (plan_secrets.go), in its hash and in the request id's record too.
	pl, sealed, err := p.concealPlan(ctx, t, req.Plan)
	if err != nil {
		return nil, false, err
	}
	if pl != req.Plan { // concealed: hashed as recorded
		if hash, err = plan.Hash(pl); err != nil {
			return nil, false, err
		}
	}
	// Admitted before the request id is claimed, so that a refusal writes
	// nothing (a retry was answered above).
	done, err := p.quota.admitPlan(ctx, t, principal, req.Plan)
	if err != nil {
		return nil, false, err
	}
	defer func() { done(createdAt(t, created, err)) }()
	concealed := &stewardv1.SubmitPlanRequest{TaskId: req.TaskId, Plan: pl, RequestId: req.RequestId}
	u, err := p.claimRequestIDFor(ctx, principal, requestid.SubmitPlan, req.TaskId, req.RequestId, concealed, requestid.RecordedBy(func(ctx context.Context) bool { return requestid.HistoryHas(ctx, p.tasks, req.TaskId, id) }))
	if err != nil {
		return nil, false, err
	}
	defer u.settle(ctx, &err)
	t, err = p.apply(ctx, req.TaskId, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		created = false
		submitted, err := submission(cur, pl, hash)
		if submitted == nil || err != nil {
			return nil, err
		}
		submitted.SealedSecrets = sealed
		created = true
		return p.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: p.actor(principal), CorrelationID: req.RequestId}, submitted)
	})
	if err != nil {
		return nil, false, err
	}
	if created && t.Plan.GetRevision() != nil {
		crashpoint.Here(crashpoint.DuringRevision)
	}
	return t, created, nil
}

// recordedPlan answers the submission of a version t's history holds
// (event id): a retry, if it is the same plan, even of a version since
// revised; else AlreadyExists.
func (p *Plane) recordedPlan(ctx context.Context, t *stewardv1.Task, version uint32, id, hash string) (*stewardv1.Task, bool, error) {
	ev, err := commandEvent(ctx, p.log, t.Contract.GetTaskId(), id)
	if err != nil {
		return nil, false, err
	}
	// hash is of the plan as sent, its secrets in clear; the record's
	// are sealed.
	clear, err := p.clearPlanHash(t.Contract.GetTaskId(), ev.GetPlanSubmitted())
	if err != nil {
		return nil, false, err
	}
	if clear != hash {
		return nil, false, errs.New(errs.AlreadyExists, "task %s has plan version %d already, with another plan (hash %s): submit a revision with a version higher than %d",
			t.Contract.GetTaskId(), version, ev.GetPlanSubmitted().GetPlanHash(), t.Plan.GetVersion())
	}
	return t, false, nil
}

// submission decides, on the task as it is now, what submitting version
// pl (of hash) records: nil for a retry of the version in force.
func submission(t *stewardv1.Task, pl *stewardv1.Plan, hash string) (*stewardv1.PlanSubmitted, error) {
	id := t.Contract.GetTaskId()
	cur := t.Plan
	switch {
	case cur.GetVersion() == pl.Version && cur.GetPlanHash() == hash:
		return nil, nil
	case cur.GetVersion() == pl.Version:
		return nil, errs.New(errs.AlreadyExists, "task %s has plan version %d already, with another plan (hash %s): submit a revision with a version higher than %d", id, pl.Version, cur.PlanHash, cur.Version)
	case cur != nil && pl.Version < cur.Version:
		return nil, errs.New(errs.FailedPrecondition, "plan.version %d is lower than task %s's current plan version %d: a revision carries a higher one", pl.Version, id, cur.Version)
	case !task.Active(t.Status):
		return nil, errs.New(errs.FailedPrecondition, "task %s is %s; only a running task takes a plan", id, task.StatusName(t.Status))
	}
	s := &stewardv1.PlanSubmitted{Plan: pl, PlanHash: hash}
	if cur != nil {
		r, err := plan.Diff(cur.Plan, pl)
		if err != nil {
			return nil, err
		}
		if err := plandriver.KeepsKinds(t, pl); err != nil {
			return nil, err
		}
		s.Revision = &stewardv1.PlanRevision{ReplacesVersion: cur.Version, Kept: r.Kept, Changed: r.Changed, Added: r.Added, Withdrawn: r.Withdrawn}
	}
	return s, nil
}

// checkPlan checks pl as a plan for t, submitted by principal, whose
// plans may call allowed (planTools; a schedule's template plan, before
// any run holds a credential, the contract's): whole (pkg/plan.Validate),
// then its milestones and sub-tasks.
func (p *Plane) checkPlan(ctx context.Context, t *stewardv1.Task, principal string, pl *stewardv1.Plan, allowed []string) error {
	if err := takesPlans(p.tools); err != nil {
		return err
	}
	now := p.now()
	var lookup error // the registry's own failure, not the plan's
	env := plan.Env{AllowedTools: allowed, Tool: func(name, version string) (*stewardv1.ToolContract, error) {
		e, _, err := p.toolFor(ctx, t, name, version)
		var ee *errs.Error
		switch {
		case errors.As(err, &ee) && ee.Code == errs.Invalid:
			return nil, errors.New(ee.Message) // Validate names the step's field
		case err != nil:
			lookup = err
			return nil, err
		case e.Unusable != nil:
			return nil, fmt.Errorf("version %s cannot be proposed: %v; register a new version", e.Tool.Contract.Version, e.Unusable)
		}
		return e.Tool.Contract, nil
	}}
	if err := plan.Validate(pl, plan.Limits{}, env); err != nil {
		if lookup != nil {
			return lookup
		}
		return err
	}
	for i, s := range pl.Steps {
		field := fmt.Sprintf("plan.steps[%d]", i)
		if err := checkMilestone(field+".milestone_id", s.MilestoneId, t.Contract); err != nil {
			return err
		}
		if err := task.CheckAskRef(t.Contract, s.GetCheckpoint().GetAskRef()); err != nil {
			return within(field+".checkpoint", err)
		}
		runs := plandriver.What(s)
		if err := checkRationale(runs.Call.GetRationale()); err != nil {
			return within(field+"."+runs.Field, err)
		}
		if runs.SubTask == nil {
			continue
		}
		if err := checkSubTask(runs.SubTask, principal, t, now); err != nil {
			return within(field+"."+runs.Field, err)
		}
	}
	return nil
}

// takesPlans refuses a plan on a plane without a tool registry (tools),
// which could check none: said before anything else, as no retry helps.
func takesPlans(tools *toolreg.Registry) error {
	if tools == nil {
		return errs.New(errs.FailedPrecondition, "this control plane does not take plans")
	}
	return nil
}

// planTools returns the tools a plan for t may call: its contract's,
// narrowed by its credential (a bare name the credential pins takes the
// pin). The credential is in force (credentialInForce).
func planTools(t *stewardv1.Task) []string {
	granted := t.Credential.GetCredential().GetAllowedTools()
	var allowed []string
	for _, entry := range t.Contract.GetAllowedTools() {
		name, version := toolpin.Split(entry)
		switch pin, ok := toolpin.Find(granted, name); {
		case !ok, version != "" && pin != "" && pin != version:
		case version == "" && pin != "":
			allowed = append(allowed, name+"@"+pin)
		default:
			allowed = append(allowed, entry)
		}
	}
	return allowed
}

// checkMilestone checks that a step's milestone, if it names one, is one
// of the contract's (task.KnownMilestone): its budget and action cap are
// what the step's work counts against.
func checkMilestone(field, id string, c *stewardv1.TaskContract) error {
	if id == "" || task.KnownMilestone(c, id) {
		return nil
	}
	return errs.Field(field, "%s is not a milestone of the task's contract (%v)", errs.Quote(id), task.MilestoneIDs(c))
}

// checkSubTask checks a sub-task step's contract as DelegateTask would
// check it for t: as a client's contract, then as a delegation of t's
// work (delegable). Fields are named as in DelegateTaskRequest.
func checkSubTask(s *stewardv1.SubTaskStep, principal string, t *stewardv1.Task, now time.Time) error {
	if err := validateClientContract(s.Contract, now); err != nil {
		return err
	}
	c, err := knownFieldsOnly(s.Contract) // a copy: delegable may change it
	if err != nil {
		return err
	}
	if _, err := delegable(c, principal, s.DelegateRef, t); err != nil {
		return err
	}
	// A share in each dimension the task's budget limits, as a delegation
	// requires (headroom); whether what is left covers it is known only
	// when the step delegates.
	own, share := t.Contract.GetBudget(), s.Contract.GetBudget()
	for _, d := range []struct {
		field, what   string
		limit, amount int64
	}{
		{"contract.budget.max_tokens", "tokens", own.GetMaxTokens(), share.GetMaxTokens()},
		{"contract.budget.max_cost_micros", "cost micro-units", own.GetMaxCostMicros(), share.GetMaxCostMicros()},
	} {
		if d.limit != 0 && d.amount == 0 {
			return errs.Field(d.field, "is required: task %s limits its %s, and a sub-task takes a share of them", t.Contract.GetTaskId(), d.what)
		}
	}
	return nil
}

// within names err's field inside prefix: a contract's
// "contract.scopes[0]" becomes a step's
// "plan.steps[2].sub_task.contract.scopes[0]".
func within(prefix string, err error) error {
	var e *errs.Error
	if !errors.As(err, &e) || e.Field == "" {
		return err
	}
	named := *e
	named.Field = prefix + "." + e.Field
	return &named
}

func (s *taskService) SubmitPlan(ctx context.Context, req *connect.Request[stewardv1.SubmitPlanRequest]) (*connect.Response[stewardv1.SubmitPlanResponse], error) {
	t, created, err := s.plane.SubmitPlan(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.SubmitPlanResponse{Task: t, Created: created}), nil
}
