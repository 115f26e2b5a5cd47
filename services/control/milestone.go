package control

import (
	"context"
	"fmt"
	"strconv"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// Milestones (docs/milestones.md): the contract's phases, checked when a
// task is created, reported on by its agent, and each a loop cap of its
// own.

// MaxProgressNote bounds a progress report's note.
const MaxProgressNote = 200

// checkMilestones checks the contract's milestones: each id unique and
// plain (it names budget lines and tags, and is shown in reasons and
// tables), each with a title; and, when any are declared, that every
// budget line names one of them.
func checkMilestones(c *stewardv1.TaskContract) error {
	if err := checkList("contract.milestones", len(c.Milestones)); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, m := range c.Milestones {
		f := fmt.Sprintf("contract.milestones[%d]", i)
		checks := []error{
			checkText(f+".milestone_id", m.MilestoneId, MaxRefLen, true),
			checkMilestoneID(f+".milestone_id", m.MilestoneId),
			checkText(f+".title", m.Title, MaxRefLen, true),
			checkText(f+".description", m.Description, MaxTextLen, false),
		}
		if m.MaxActions > MaxLimit {
			checks = append(checks, errs.Field(f+".max_actions", "is more than %d", MaxLimit))
		}
		for _, err := range checks {
			if err != nil {
				return err
			}
		}
		if seen[m.MilestoneId] {
			return errs.Field(f+".milestone_id", "%s appears twice", errs.Quote(m.MilestoneId))
		}
		seen[m.MilestoneId] = true
	}
	if len(c.Milestones) == 0 {
		return nil // budget lines alone name milestones, as before
	}
	for i, b := range c.GetBudget().GetMilestones() {
		if !seen[b.MilestoneId] {
			return errs.Field(fmt.Sprintf("contract.budget.milestones[%d].milestone_id", i), "%s is not one of contract.milestones (%v)",
				errs.Quote(b.MilestoneId), task.MilestoneIDs(c))
		}
	}
	return nil
}

// checkMilestoneID refuses an id other than letters, digits, '.', '-' and
// '_': it is part of alert keys ("cost:80:<id>") and of people's tables.
func checkMilestoneID(field, id string) error {
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return errs.Field(field, "%s may hold only letters, digits, '.', '-' and '_'", errs.Quote(id))
		}
	}
	return nil
}

// milestoneCapStop is capStop for one milestone: the proposal or decision
// tagged with a milestone at its cap is refused, and the task waits for
// input with NEEDS_INPUT_CAUSE_MILESTONE_CAP, naming the milestone, which
// a person's resume grants max_actions more (the fold's
// MilestoneState.actions_granted). Its id derives from the milestone, its
// cap in force and the task's head, as capStop's does, so racing
// refusals record one stop.
func milestoneCapStop(c commands, t *stewardv1.Task, milestoneID, what, causationID, correlationID string) *capStop {
	taskID := t.Contract.GetTaskId()
	m := task.MilestoneOf(t, milestoneID)
	limit := m.GetMaxActions()
	reason := fmt.Sprintf("milestone %s (%s) reached its cap of %d actions and decisions (contract.milestones[].max_actions): resume the task to let it go on with %d more, or end it",
		milestoneID, m.GetTitle(), limit, task.FindMilestone(t.Contract, milestoneID).GetMaxActions())
	ev, err := c.event(event.Meta{
		ID:            event.ID(taskID, event.TypeTaskNeedsInput, "milestone-cap", milestoneID, strconv.FormatUint(uint64(limit), 10), strconv.FormatUint(t.LastSequence, 10)),
		TaskID:        taskID,
		Actor:         c.actor(stewardPrincipal),
		CausationID:   causationID,
		CorrelationID: correlationID,
	}, &stewardv1.TaskNeedsInput{Reason: reason, Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_MILESTONE_CAP, MilestoneId: milestoneID})
	return &capStop{event: ev, err: err, refusal: errs.New(errs.FailedPrecondition,
		"task %s: milestone %s reached its cap of %d actions and decisions, so this %s is refused; the task now waits for input: a person's ResumeTask lets the milestone go on",
		taskID, milestoneID, limit, what)}
}

// progress takes the agents' reports on their milestones.
type progress struct{ commands }

// ReportProgress records the agent's word on how far a milestone has
// come, when it is news: another percent or note than its last report.
func (p *progress) ReportProgress(ctx context.Context, principal string, req *stewardv1.ReportProgressRequest) (*stewardv1.ReportProgressResponse, error) {
	if err := checkCommand(req.TaskId, "", ""); err != nil {
		return nil, err
	}
	if err := checkText("milestone_id", req.MilestoneId, MaxRefLen, true); err != nil {
		return nil, err
	}
	if req.Percent > task.MaxProgressPercent {
		return nil, errs.Field("percent", "%d is past 100", req.Percent)
	}
	if err := checkText("note", req.Note, MaxProgressNote, false); err != nil {
		return nil, err
	}
	recorded := false
	t, err := p.apply(ctx, req.TaskId, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		recorded = false
		if task.Terminal(t.Status) {
			return nil, errs.New(errs.FailedPrecondition, "task %s has ended (%s): its milestones stand as they are", req.TaskId, task.StatusName(t.Status))
		}
		if task.FindMilestone(t.Contract, req.MilestoneId) == nil {
			return nil, errs.Field("milestone_id", "task %s has no milestone %s (%v)", req.TaskId, errs.Quote(req.MilestoneId), task.MilestoneIDs(t.Contract))
		}
		if m := task.MilestoneOf(t, req.MilestoneId); m.ProgressedAt != nil && m.Percent == req.Percent && m.Note == req.Note {
			return nil, nil // not news
		}
		recorded = true
		// The id names the report, not only the head: another replica's
		// report at the same head must conflict, not pass for this one.
		return p.event(event.Meta{
			ID: event.ID(req.TaskId, event.TypeMilestoneProgressed, req.MilestoneId, strconv.FormatUint(t.LastSequence, 10),
				strconv.FormatUint(uint64(req.Percent), 10), req.Note),
			TaskID: req.TaskId, Actor: p.actor(principal),
		}, &stewardv1.MilestoneProgressed{MilestoneId: req.MilestoneId, Percent: req.Percent, Note: req.Note})
	})
	if err != nil {
		return nil, err
	}
	return &stewardv1.ReportProgressResponse{Milestone: task.MilestoneOf(t, req.MilestoneId), Recorded: recorded, CurrentMilestone: t.CurrentMilestone}, nil
}

func (s *taskService) ReportProgress(ctx context.Context, req *connect.Request[stewardv1.ReportProgressRequest]) (*connect.Response[stewardv1.ReportProgressResponse], error) {
	resp, err := s.plane.progress.ReportProgress(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}
