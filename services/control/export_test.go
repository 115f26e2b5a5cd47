package control

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/schedule"
)

// The commands of the plane's groups, as its tests call them: the RPC
// edge (service.go) calls each group directly.

func (p *Plane) ReviseContract(ctx context.Context, principal string, req *stewardv1.ReviseContractRequest) (*stewardv1.Task, *stewardv1.ContractRevision, error) {
	return revisions{p}.ReviseContract(ctx, principal, req)
}

func (p *Plane) DecideContractRevision(ctx context.Context, who rpc.Identity, req *stewardv1.DecideContractRevisionRequest) (*stewardv1.Task, *stewardv1.ContractRevision, error) {
	return revisions{p}.DecideContractRevision(ctx, who, req)
}

func (p *Plane) AcceptTask(ctx context.Context, principal string, req *stewardv1.AcceptTaskRequest) (*stewardv1.Task, error) {
	return p.acceptance.AcceptTask(ctx, principal, req)
}

func (p *Plane) ReturnTask(ctx context.Context, principal string, req *stewardv1.ReturnTaskRequest) (*stewardv1.Task, error) {
	return p.acceptance.ReturnTask(ctx, principal, req)
}

func (p *Plane) SubmitArtifact(ctx context.Context, principal string, req *stewardv1.SubmitArtifactRequest) (*stewardv1.Artifact, *stewardv1.Task, error) {
	return p.acceptance.SubmitArtifact(ctx, principal, req)
}

func (p *Plane) MarkProduced(ctx context.Context, principal string, req *stewardv1.MarkProducedRequest) (*stewardv1.Task, *stewardv1.AcceptanceRound, error) {
	return p.acceptance.MarkProduced(ctx, principal, req)
}

func (p *Plane) ReportUsage(ctx context.Context, principal string, req *stewardv1.ReportUsageRequest) (*stewardv1.Task, error) {
	return p.delegation.ReportUsage(ctx, principal, req)
}

func (p *Plane) RaiseBudget(ctx context.Context, principal string, req *stewardv1.RaiseBudgetRequest) (*stewardv1.Task, error) {
	return p.delegation.RaiseBudget(ctx, principal, req)
}

func (p *Plane) DelegateTask(ctx context.Context, principal string, req *stewardv1.DelegateTaskRequest) (*stewardv1.Task, bool, error) {
	return p.delegation.DelegateTask(ctx, principal, req)
}

func (p *Plane) RecordDecision(ctx context.Context, principal string, req *stewardv1.RecordDecisionRequest) (*stewardv1.Decision, bool, error) {
	return p.decisions.RecordDecision(ctx, principal, req)
}

func (p *Plane) AttachContext(ctx context.Context, principal string, req *stewardv1.AttachContextRequest) (*stewardv1.ContextItem, bool, error) {
	return p.decisions.AttachContext(ctx, principal, req)
}

func (p *Plane) ForkTask(ctx context.Context, principal string, req *stewardv1.ForkTaskRequest) (*stewardv1.Task, bool, error) {
	return p.delegation.ForkTask(ctx, principal, req)
}

func (p *Plane) Heartbeat(ctx context.Context, principal string, req *stewardv1.HeartbeatRequest) (*stewardv1.HeartbeatResponse, error) {
	return p.heartbeats.Heartbeat(ctx, principal, req)
}

// Undoable and InFlight are the compensation's rules, for its tests.
var (
	Undoable = undoable
	InFlight = inFlight
)

// LiveSchedules lists the schedules a start ticks.
func (p *Plane) LiveSchedules(ctx context.Context) ([]string, error) {
	return p.schedules.liveSchedules(ctx)
}

// TickSchedule ticks schedule id at the plane's time, as its timer would.
func (p *Plane) TickSchedule(ctx context.Context, id string) error {
	return p.schedules.tickSchedule(ctx, id, time.Time{}, false)
}

func (p *Plane) PauseSchedule(ctx context.Context, principal, id, reason string) (*stewardv1.Schedule, error) {
	return p.schedules.steerSchedule(ctx, principal, id, reason, &stewardv1.SchedulePaused{Reason: reason})
}

func (p *Plane) ResumeSchedule(ctx context.Context, principal, id, reason string) (*stewardv1.Schedule, error) {
	return p.schedules.steerSchedule(ctx, principal, id, reason, &stewardv1.ScheduleResumed{Reason: reason})
}

func (p *Plane) DeleteSchedule(ctx context.Context, principal, id, reason string) (*stewardv1.Schedule, error) {
	return p.schedules.steerSchedule(ctx, principal, id, reason, &stewardv1.ScheduleDeleted{Reason: reason})
}

func (p *Plane) CreateSchedule(ctx context.Context, principal string, req *stewardv1.CreateScheduleRequest) (*stewardv1.Schedule, bool, error) {
	return p.schedules.CreateSchedule(ctx, principal, req)
}

func (p *Plane) GetSchedule(ctx context.Context, id string) (*stewardv1.Schedule, error) {
	return p.schedules.GetSchedule(ctx, id)
}

func (p *Plane) ListSchedules(ctx context.Context, req *stewardv1.ListSchedulesRequest) ([]*stewardv1.Schedule, string, error) {
	return p.schedules.ListSchedules(ctx, req)
}

// CreateObjective is TaskService.CreateObjective without the RPC.
func (p *Plane) CreateObjective(ctx context.Context, principal string, req *stewardv1.CreateObjectiveRequest) (*stewardv1.Objective, bool, error) {
	return p.objectives.Create(ctx, principal, req)
}

// CloseObjective is TaskService.CloseObjective without the RPC.
func (p *Plane) CloseObjective(ctx context.Context, principal string, req *stewardv1.CloseObjectiveRequest) (*stewardv1.Objective, error) {
	return p.objectives.Close(ctx, principal, req)
}

// CriteriaInputs is what MarkProduced compares before writing the checks
// it evaluated, for its tests.
var CriteriaInputs = criteriaInputs

// ReserveForRequest reserves out of contract's objective what CreateTask
// under requestID would, and writes no task: the first try of a
// CreateTask that died between its reservation and its task.
func (p *Plane) ReserveForRequest(ctx context.Context, principal, requestID string, contract *stewardv1.TaskContract) error {
	taskID, _, err := p.requestedTask(ctx, principal, requestID)
	if err != nil {
		return err
	}
	return p.objectives.join(ctx, principal, taskID, contract)
}

// RecordFiring records firing f of schedule id with disposition d and no
// run, as another tick that decided otherwise would.
func (p *Plane) RecordFiring(ctx context.Context, id string, f time.Time, d stewardv1.FiringDisposition) error {
	l, err := p.schedules.loadSchedule(ctx, id)
	if err != nil {
		return err
	}
	return p.schedules.fire(ctx, l, schedule.Decision{Firing: f, Disposition: d, Reason: "another tick decided so"})
}

// RecordRunNotMade records firing f of schedule id as started by its run,
// and does not make the run: a read of the run behind the record sees no
// run yet. It returns the run's id.
func (p *Plane) RecordRunNotMade(ctx context.Context, id string, f time.Time) (string, error) {
	l, err := p.schedules.loadSchedule(ctx, id)
	if err != nil {
		return "", err
	}
	taskID := schedule.RunTaskID(id, f)
	ev, err := p.event(event.Meta{ID: schedule.FiredEventID(id, "fired", f), TaskID: id, Actor: p.actor(l.s.Creator)}, &stewardv1.ScheduleFired{Firing: &stewardv1.ScheduleFiring{
		FiringTime: timestamppb.New(f), Disposition: stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, TaskId: taskID,
	}})
	if err != nil {
		return "", err
	}
	_, err = p.log.Append(ctx, l.head, ev)
	return taskID, err
}

// MakeRun makes the run of schedule id's firing f, and records nothing.
func (p *Plane) MakeRun(ctx context.Context, id string, f time.Time) error {
	l, err := p.schedules.loadSchedule(ctx, id)
	if err != nil {
		return err
	}
	_, err = p.schedules.createRun(ctx, l.s, f)
	return err
}

// ProposeDraftedOn drafts req against stale, a view of its task read
// earlier, and records it against the task as it stands: a proposal whose
// draft raced a change of the task (fallback_race_test.go).
func (p *Plane) ProposeDraftedOn(ctx context.Context, stale *stewardv1.Task, req *stewardv1.ProposeActionRequest) error {
	params, err := proposalParams(req)
	if err != nil {
		return err
	}
	pr := proposalOf(req, "agent", params, req.ToolVersion)
	d, err := p.prepare(ctx, stale, pr)
	if err != nil {
		return err
	}
	_, _, _, err = p.record(ctx, req.TaskId, d, "", func(*stewardv1.Task) (bool, error) { return true, nil })
	return err
}

// CancelAsPrevious ends run taskID of schedule s as a cancel_previous
// firing does, before the firing is recorded: the state a tick racing
// that firing's record finds (schedule_race_test.go).
func (p *Plane) CancelAsPrevious(ctx context.Context, s *stewardv1.Schedule, taskID string) error {
	return p.schedules.cancelRun(ctx, s, taskID)
}
