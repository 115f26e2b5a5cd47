package control

import (
	"context"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// heartbeats takes the agents' heartbeats (docs/liveness.md). A heartbeat
// is the agent's word, as any command of its own is; it is recorded only
// when it is news — an ask or escalation of its silence is open, its task
// was suspended for it, or its last word is half an ask's wait old — so an
// agent may heartbeat every few seconds for days without growing its log.
type heartbeats struct {
	commands
	now func() time.Time
}

// MaxHeartbeatNote bounds a heartbeat's note.
const MaxHeartbeatNote = 200

// Heartbeat says the task's agent is at work; it resumes a task suspended
// for the agent's silence.
func (hb *heartbeats) Heartbeat(ctx context.Context, principal string, req *stewardv1.HeartbeatRequest) (*stewardv1.HeartbeatResponse, error) {
	if err := checkCommand(req.TaskId, "", ""); err != nil {
		return nil, err
	}
	if err := checkText("note", req.Note, MaxHeartbeatNote, false); err != nil {
		return nil, err
	}
	var question string
	var resumed bool
	t, err := hb.apply(ctx, req.TaskId, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		question, resumed = "", false
		if task.Terminal(t.Status) {
			return nil, errs.New(errs.FailedPrecondition, "task %s has ended (%s): there is nothing to be at work on", req.TaskId, task.StatusName(t.Status))
		}
		if task.AgentAsked(t) {
			question = task.AgentQuestion
		}
		meta := event.Meta{ID: event.ID(req.TaskId, event.TypeAgentHeartbeat, strconv.FormatUint(t.LastSequence, 10)), TaskID: req.TaskId, Actor: hb.actor(principal)}
		switch {
		case t.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED && t.SuspendedFor == stewardv1.SuspendCause_SUSPEND_CAUSE_AGENT_SILENT:
			resumed = true
			return hb.event(meta, &stewardv1.TaskResumed{Reason: "its agent is at work again" + noteSuffix(req.Note)})
		case news(t, hb.now()):
			return hb.event(meta, &stewardv1.AgentHeartbeat{Note: req.Note})
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return &stewardv1.HeartbeatResponse{TaskStatus: t.Status, TaskStatusReason: t.StatusReason, Question: question, Resumed: resumed}, nil
}

// news reports whether a heartbeat at now tells t anything: an ask or an
// escalation is open, or the agent's last word is half an ask's wait old;
// or, at work, t is marked stalled or has been quiet for half its stall
// threshold — an agent alive and idle is no stall, and its word, on the
// log, keeps the watchdog from marking the task (and governance from
// suspending it). Else a heartbeat is taken and not recorded.
func news(t *stewardv1.Task, now time.Time) bool {
	if task.Working(t.Status) && (t.StalledSince != nil || now.Sub(t.UpdatedAt.AsTime()) >= task.StallAfter(t.Contract)/2) {
		return true
	}
	ask := t.Contract.GetTimers().GetAgentAskAfter().AsDuration()
	return ask > 0 && (task.AgentAsked(t) || task.AgentEscalated(t) || task.AgentSilentFor(t, now) >= ask/2)
}

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return ": " + note
}

func (s *taskService) Heartbeat(ctx context.Context, req *connect.Request[stewardv1.HeartbeatRequest]) (*connect.Response[stewardv1.HeartbeatResponse], error) {
	resp, err := s.plane.heartbeats.Heartbeat(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}
