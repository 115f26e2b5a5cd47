package control

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// revisions takes the revisions of tasks' contracts: a group of the
// plane's commands of its own, as acceptance is.
type revisions struct{ *Plane }

// ReviseContract proposes a new version of a task's contract
// (docs/revisions.md), recorded as ContractRevisionProposed: the whole
// revised contract, its hash and the reason. The fold checks the rest on
// the record — the task not ended, no other revision open, nothing changed
// but the revisable fields — and counts an accountable owner's proposal as
// their approval; governance judges it next (ContractRevisionEvaluated).
// With a request id it is idempotent (see claimRequestID).
func (p revisions) ReviseContract(ctx context.Context, principal string, req *stewardv1.ReviseContractRequest) (_ *stewardv1.Task, _ *stewardv1.ContractRevision, err error) {
	if err := checkRevision(req); err != nil {
		return nil, nil, err
	}
	u, err := p.claimRequestID(ctx, principal, requestid.ReviseContract, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, nil, err
	}
	defer u.settle(ctx, &err)
	t, history, err := p.tasks.Load(ctx, req.TaskId)
	if err != nil {
		return nil, nil, err
	}
	id := u.id
	if id != "" && history.Has(id) {
		return t, task.FindRevision(t, revisionID(req.TaskId, id)), nil // a retry of a recorded proposal
	}
	if id == "" {
		id = event.RandomID()
	}
	if err := revisable(t); err != nil {
		return nil, nil, err
	}
	if err := checkRevised(task.Revised(t.Contract, overlay(t.Contract, req.Contract))); err != nil {
		return nil, nil, err
	}
	if err := keepsWorkedMilestones(t, req.Contract.GetMilestones()); err != nil {
		return nil, nil, err
	}
	t, err = p.apply(ctx, req.TaskId, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		c := task.Revised(cur.Contract, overlay(cur.Contract, req.Contract))
		if len(task.Changed(cur.Contract, c)) == 0 {
			return nil, errs.Field("contract", "changes nothing: it is the version in force (%d)", task.ContractVersion(cur))
		}
		hash, err := task.ContractHash(c)
		if err != nil {
			return nil, err
		}
		return p.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: p.actor(principal), CorrelationID: req.RequestId, Time: p.now()},
			&stewardv1.ContractRevisionProposed{
				RevisionId: revisionID(req.TaskId, id), Version: task.ContractVersion(cur) + 1, ContractHash: hash,
				Contract: c, Reason: req.Reason, ProposedBy: principal,
			})
	})
	if err != nil {
		return nil, nil, err
	}
	return t, task.FindRevision(t, revisionID(req.TaskId, id)), nil
}

// revisionID derives a revision's id from the id of the event that
// proposes it.
func revisionID(taskID, eventID string) string {
	return "rev-" + event.ID(taskID, "contract-revision", eventID)[:24]
}

// revisable names the field that keeps t from being revised now: an
// ended task, or another revision open.
func revisable(t *stewardv1.Task) error {
	if task.Terminal(t.Status) {
		return &errs.Error{Code: errs.FailedPrecondition, Field: "task_id",
			Message: fmt.Sprintf("task %s is %s: an ended task's contract is not revised", t.Contract.GetTaskId(), task.StatusName(t.Status))}
	}
	if len(t.ContractRevisions) >= task.MaxContractRevisions {
		return task.RevisionsExhausted(t)
	}
	if r := task.OpenRevision(t); r != nil {
		return &errs.Error{Code: errs.FailedPrecondition, Field: "task_id",
			Message: fmt.Sprintf("task %s already has an open contract revision %s (version %d): it is approved or rejected first (DecideContractRevision)", t.Contract.GetTaskId(), r.RevisionId, r.Version)}
	}
	return nil
}

// revisableFields are the contract fields a revision may set, as the
// request spells them; budget may carry milestones and nothing else.
func revisableField(name string) bool {
	return slices.Contains([]string{"intent", "desired_outcome", "acceptance_criteria", "budget", "milestones"}, name)
}

// checkRevision checks a ReviseContract request as sent: every field set
// in its contract must be revisable, and each is checked as at CreateTask.
func checkRevision(req *stewardv1.ReviseContractRequest) error {
	if err := checkCommand(req.TaskId, req.RequestId, ""); err != nil {
		return err
	}
	if strings.TrimSpace(req.Reason) == "" {
		return errs.Field("reason", "is required: say why the contract changes")
	}
	if err := checkText("reason", req.Reason, MaxTextLen, true); err != nil {
		return err
	}
	if req.Contract == nil {
		return errs.Field("contract", "is required: the fields it revises")
	}
	var refused error
	req.Contract.ProtoReflect().Range(func(f protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if !revisableField(string(f.Name())) {
			refused = errs.Field("contract."+string(f.Name()), "may not be revised: only intent, desired_outcome, acceptance_criteria, milestones and budget.milestones may (docs/revisions.md)")
		}
		return refused == nil
	})
	if refused != nil {
		return refused
	}
	if b := req.Contract.Budget; b != nil {
		b.ProtoReflect().Range(func(f protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
			if f.Name() != "milestones" {
				refused = errs.Field("contract.budget."+string(f.Name()), "may not be revised: a budget is raised by a budget owner (RaiseBudget); only its milestones are revised")
			}
			return refused == nil
		})
	}
	return refused
}

// overlay is cur's revisable fields with those rev sets in their place:
// a field left unset keeps its value.
func overlay(cur, rev *stewardv1.TaskContract) *stewardv1.TaskContract {
	out := proto.CloneOf(cur)
	if rev.GetIntent() != "" {
		out.Intent = rev.Intent
	}
	if rev.GetDesiredOutcome() != "" {
		out.DesiredOutcome = rev.DesiredOutcome
	}
	if len(rev.GetAcceptanceCriteria()) > 0 {
		out.AcceptanceCriteria = rev.AcceptanceCriteria
	}
	if len(rev.GetMilestones()) > 0 {
		out.Milestones = rev.Milestones
	}
	if ms := rev.GetBudget().GetMilestones(); len(ms) > 0 {
		out.Budget = proto.CloneOf(out.Budget)
		if out.Budget == nil {
			out.Budget = &stewardv1.Budget{}
		}
		out.Budget.Milestones = ms
	}
	return out
}

// checkRevised checks the revised contract's revisable fields as
// CreateTask checks them: criteria compile, milestones fit the budget, a
// reviewer is named where a criterion asks for one.
func checkRevised(c *stewardv1.TaskContract) error {
	for _, err := range []error{
		checkText("contract.intent", c.Intent, MaxTextLen, true),
		checkText("contract.desired_outcome", c.DesiredOutcome, MaxTextLen, true),
		checkBudget(c.Budget),
		checkMilestones(c),
		checkCriteria(c.AcceptanceCriteria),
		checkAcceptance(c),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *taskService) ReviseContract(ctx context.Context, req *connect.Request[stewardv1.ReviseContractRequest]) (*connect.Response[stewardv1.ReviseContractResponse], error) {
	t, r, err := revisions{s.plane}.ReviseContract(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ReviseContractResponse{Task: t, Revision: r}), nil
}

// keepsWorkedMilestones refuses a revised milestone list that drops a
// milestone something was already tagged with — an action, a decision, a
// plan step, a report — so that no recorded work is left naming a
// milestone the contract no longer has. A list left unset keeps them all.
func keepsWorkedMilestones(t *stewardv1.Task, revised []*stewardv1.Milestone) error {
	if len(revised) == 0 {
		return nil
	}
	kept := map[string]bool{}
	for _, m := range revised {
		kept[m.MilestoneId] = true
	}
	for _, m := range t.Milestones {
		if !kept[m.MilestoneId] && (m.Status != stewardv1.MilestoneStatus_MILESTONE_STATUS_PENDING || m.Steps > 0) {
			return errs.Field("contract.milestones", "drops milestone %s, which work was already tagged with: keep it (it may be marked done by its steps or a report)", errs.Quote(m.MilestoneId))
		}
	}
	return nil
}
