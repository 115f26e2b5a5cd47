package control_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// TestAHeartbeatIsRecordedWhenItIsNews: a heartbeat is the agent's word,
// recorded only when it tells the task something — its last word half an
// ask's wait old, an ask open — answers the question it was asked, and
// resumes a task suspended for the agent's silence; a task that has ended
// takes none.
func TestAHeartbeatIsRecordedWhenItIsNews(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	req := validRequest("beats")
	req.Contract.Timers = &stewardv1.TaskTimers{AgentAskAfter: durationpb.New(time.Minute), AgentSuspendAfter: durationpb.New(3 * time.Minute)}
	p, _, err := r.ctl.CreateTask(ctx, "agent", req)
	if err != nil {
		t.Fatal(err)
	}
	id := p.Contract.TaskId
	r.running(id)
	beat := func(want stewardv1.TaskStatus) *stewardv1.HeartbeatResponse {
		t.Helper()
		resp, err := r.ctl.Heartbeat(ctx, "agent", &stewardv1.HeartbeatRequest{TaskId: id, Note: "syncing"})
		if err != nil || resp.TaskStatus != want {
			t.Fatalf("heartbeat: %v, %v; want the task %s", resp, err, want)
		}
		return resp
	}
	beats := func() int { return r.counts(t, id)[event.TypeAgentHeartbeat] }

	beat(stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	if n := beats(); n != 0 {
		t.Fatalf("a heartbeat right after the agent's last word recorded %d events; it is no news", n)
	}
	r.clock.Advance(40 * time.Second)
	beat(stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	if n := beats(); n != 1 {
		t.Fatalf("a heartbeat past half an ask's wait recorded %d events, want 1", n)
	}

	asked := stewardtest.Event(t, id, &stewardv1.AgentAsked{Question: task.AgentQuestion})
	asked.Time = timestamppb.New(r.clock.Now())
	r.AppendEvents(id, asked)
	if resp := beat(stewardv1.TaskStatus_TASK_STATUS_RUNNING); resp.Question != task.AgentQuestion || beats() != 2 {
		t.Fatalf("a heartbeat while asked: question %q, %d heartbeats; want the question, and it recorded", resp.Question, beats())
	}
	if tk := r.task(t, id); task.AgentAsked(tk) {
		t.Fatalf("the heartbeat left the ask open")
	}

	r.Append(id, &stewardv1.TaskSuspended{Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_AGENT_SILENT, Reason: "silent"})
	if resp := beat(stewardv1.TaskStatus_TASK_STATUS_RUNNING); !resp.Resumed {
		t.Fatalf("a heartbeat did not resume a task suspended for its agent's silence: %v", resp)
	}
	r.Append(id, &stewardv1.TaskSuspended{Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT, Reason: "spent"})
	if resp := beat(stewardv1.TaskStatus_TASK_STATUS_SUSPENDED); resp.Resumed {
		t.Fatalf("a heartbeat resumed a task suspended for its budget")
	}

	if _, err := r.ctl.CancelTask(ctx, "agent", &stewardv1.CancelTaskRequest{TaskId: id, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.Heartbeat(ctx, "agent", &stewardv1.HeartbeatRequest{TaskId: id}); errs.CodeOf(err) != errs.FailedPrecondition {
		t.Fatalf("a heartbeat for an ended task: %v, want failed_precondition", err)
	}
}

// TestTheAgentLadderIsInOrder: the liveness timers are refused out of
// order, or without an ask first, naming the field.
func TestTheAgentLadderIsInOrder(t *testing.T) {
	r := newHarness(t)
	for _, tt := range []struct {
		ask, esc, sus time.Duration
		field         string
	}{
		{0, 2 * time.Minute, 0, "contract.timers.agent_escalate_after"},
		{0, 0, 3 * time.Minute, "contract.timers.agent_suspend_after"},
		{2 * time.Minute, time.Minute, 0, "contract.timers.agent_escalate_after"},
		{time.Minute, 2 * time.Minute, 2 * time.Minute, "contract.timers.agent_suspend_after"},
		{30 * time.Second, 0, 0, "contract.timers.agent_ask_after"},
		{time.Minute, 2 * time.Minute, 3 * time.Minute, ""},
	} {
		req := validRequest("ladder-" + tt.field + tt.ask.String() + tt.esc.String())
		tm := &stewardv1.TaskTimers{}
		for _, d := range []struct {
			v   time.Duration
			set **durationpb.Duration
		}{{tt.ask, &tm.AgentAskAfter}, {tt.esc, &tm.AgentEscalateAfter}, {tt.sus, &tm.AgentSuspendAfter}} {
			if d.v > 0 {
				*d.set = durationpb.New(d.v)
			}
		}
		req.Contract.Timers = tm
		_, _, err := r.ctl.CreateTask(context.Background(), "agent", req)
		if got := fieldOf(err); got != tt.field {
			t.Errorf("ask %s, escalate %s, suspend %s: %v; want the field %q", tt.ask, tt.esc, tt.sus, err, tt.field)
		}
	}
}

// fieldOf is the field err names; "" for none, or no error.
func fieldOf(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
