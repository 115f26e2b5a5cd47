package control

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control/plandriver"
)

// A schedule's template may carry a plan (docs/schedules.md): checked at
// CreateSchedule as SubmitPlan checks a plan against the template's
// contract, and submitted for each run, as its creator, once the run has
// started and holds its credential — as if its agent had submitted it.
// The submission's event id derives from the run and the plan's version
// (SubmitPlan), so a redelivery, the second of the two events that bring
// it on, or a second plane submits it once. A run whose agent submitted
// a plan of its own first keeps it. A plan refused at run time
// (a tool withdrawn since, a credential narrower than the contract) fails
// the run, saying why: recorded on the schedule and announced
// (schedule_runend.go), not left waiting for a plan that will not come.

// checkTemplatePlan checks pl, a template's plan, for a run of contract
// in tenant, made by principal. Its tools are the contract's (a run's
// credential is the contract's bounds, or narrower: a narrower one
// refuses the plan when the run starts) and the versions registered now.
func (p *schedules) checkTemplatePlan(ctx context.Context, principal, tenant string, contract *stewardv1.TaskContract, pl *stewardv1.Plan) error {
	if pl == nil {
		return nil
	}
	// As a task created now, which takes the tool versions registered
	// before it (toolFor).
	now, err := p.log.LastToolSequence(ctx)
	if err != nil {
		return err
	}
	// Holding the credential a run is issued at most (the contract's
	// bounds), against which a sub_task step is checked as delegable.
	t := &stewardv1.Task{Contract: contract, Tenant: tenant, CreatedSequence: now + 1,
		Credential: &stewardv1.CredentialState{Credential: credential.Root(contract, principal, p.now(), 0)}}
	if err := p.checkPlan(ctx, t, principal, pl, contract.GetAllowedTools()); err != nil {
		return underTemplate(err)
	}
	// A run's plan has its secret literals sealed under the run
	// (plan_secrets.go); the schedule's chain and GetSchedule would keep
	// them in clear.
	concealed, _, err := p.concealPlan(ctx, t, pl)
	if err != nil {
		return underTemplate(err)
	}
	for i := range pl.Steps {
		if !proto.Equal(concealed.Steps[i], pl.Steps[i]) {
			return errs.Field(fmt.Sprintf("template.plan.steps[%d].%s.params", i, plandriver.What(pl.Steps[i]).Field),
				"holds a value its tool marks secret, which a schedule's template would keep in clear: let the run's agent submit a plan with secrets (SubmitPlan seals them)")
		}
	}
	return nil
}

// planReactions submit template plans: a run takes its plan once it has
// started and holds its credential, whichever comes last. None on a plane
// that takes no plans, which would refuse every one.
func (p *schedules) planReactions() []eventlog.Reaction {
	if p.tools == nil {
		return nil
	}
	return slices.Concat(on[*stewardv1.TaskStarted](inOrder(p.submitTemplatePlan)), on[*stewardv1.CredentialIssued](inOrder(p.submitTemplatePlan)))
}

// submitTemplatePlan is the reaction to a run's start and to its
// credential's issue: once both are in, the run's schedule's template
// plan, if it has one, is submitted for it.
func (p *schedules) submitTemplatePlan(ctx context.Context, rec *stewardv1.EventRecord) error {
	taskID := rec.Event.TaskId
	t, _, err := p.tasks.Load(ctx, taskID)
	if err != nil {
		return err
	}
	run := t.ScheduleRun
	if run == nil || t.Plan != nil || t.Credential == nil || !task.Active(t.Status) {
		return nil // not a run, submitted, not yet ready, or over
	}
	l, err := p.loadSchedule(ctx, run.ScheduleId)
	if err != nil {
		return err
	}
	pl := l.s.GetTemplate().GetPlan()
	if pl == nil {
		return nil
	}
	if p.planLoaded != nil {
		p.planLoaded(taskID)
	}
	_, _, err = p.SubmitPlan(ctx, l.s.Creator, &stewardv1.SubmitPlanRequest{TaskId: taskID, Plan: proto.CloneOf(pl)})
	if err == nil || !refusedRun(err) {
		return err
	}
	// Refused as a plan is in force already — its agent's, submitted
	// meanwhile — or as the run ended: the run goes on as it is.
	if t, _, lerr := p.tasks.Load(ctx, taskID); lerr != nil || t.Plan != nil || !task.Active(t.Status) {
		return lerr
	}
	id := event.ID(taskID, "schedule.plan_refused")
	_, err = p.end(ctx, l.s.Creator, taskID, id, "", "the template plan of schedule "+l.s.ScheduleId+" was refused: "+err.Error(), stewardv1.TaskStatus_TASK_STATUS_FAILED, false)
	if errs.Is(err, errs.FailedPrecondition) {
		return nil // ended meanwhile
	}
	return err
}
