package governance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/timer"
)

// The agent's liveness ladder (docs/liveness.md): a task whose contract
// sets contract.timers.agent_ask_after has one timer at its next rung,
// counted from its agent's last word — ask "still working?", escalate to
// the owners, suspend — each rung on the log. When the timer fires and the
// agent has spoken since, it is set again from that word; the ladder
// climbs only while the task is active, and starts again when it resumes.

// AgentTimerKind is the kind of the agents' liveness timers.
const AgentTimerKind = "governance.agent"

// The rungs of the ladder.
const (
	rungAsk      = "ask"
	rungEscalate = "escalate"
	rungSuspend  = "suspend"
)

type agentTimer struct {
	TaskID string `json:"task_id"`
}

// agentWaits are a contract's liveness thresholds; zero is off.
type agentWaits struct{ ask, escalate, suspend time.Duration }

func agentWaitsOf(c *stewardv1.TaskContract) agentWaits {
	tm := c.GetTimers()
	return agentWaits{tm.GetAgentAskAfter().AsDuration(), tm.GetAgentEscalateAfter().AsDuration(), tm.GetAgentSuspendAfter().AsDuration()}
}

// nextRung is the rung t's agent reaches next if it stays silent, and when.
func nextRung(t *stewardv1.Task, w agentWaits) (rung string, due time.Time) {
	seen := t.AgentSeenAt.AsTime()
	switch {
	case !task.AgentAsked(t):
		return rungAsk, seen.Add(w.ask)
	case w.escalate > 0 && !task.AgentEscalated(t):
		return rungEscalate, seen.Add(w.escalate)
	case w.suspend > 0:
		return rungSuspend, seen.Add(w.suspend)
	}
	return "", time.Time{} // asked and escalated; nothing more to do
}

// armAgent sets the agent's timer of a task that starts or goes back to
// work.
func (ck *clock) armAgent(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := ck.tasks.Load(ctx, rec.Event.TaskId)
	if err != nil {
		return err
	}
	return ck.armAgentOf(ctx, t, "")
}

// armAgentOf sets t's agent timer at its next rung, if t watches its agent
// and is at work. fired is the timer that fired, if one did: the server
// keeps a fired timer's id for a day and would ignore it set again, so a
// rung found not yet due (the plane's clock behind the server's) is set
// under another.
func (ck *clock) armAgentOf(ctx context.Context, t *stewardv1.Task, fired string) error {
	w := agentWaitsOf(t.Contract)
	if w.ask <= 0 || !task.Active(t.Status) {
		return nil
	}
	rung, due := nextRung(t, w)
	if rung == "" {
		return nil
	}
	taskID := t.Contract.GetTaskId()
	payload, err := json.Marshal(agentTimer{TaskID: taskID})
	if err != nil {
		return err
	}
	// One timer per rung and word: set again for the same, it is the same.
	// Timers fire by the server's clock; the plane's says how far off the
	// rung is (the same clock, but in a test that moves it on).
	id := fmt.Sprintf("%s/%d/%s", taskID, t.AgentSeenAt.AsTime().UnixNano(), rung)
	if strings.HasPrefix(fired, id) {
		id = fired + "'"
	}
	if err := ck.timers.Set(ctx, AgentTimerKind, id, time.Now().Add(due.Sub(ck.now())), payload); err != nil {
		return fmt.Errorf("set the agent timer of task %s: %w", taskID, err)
	}
	return nil
}

// onAgentTimer climbs a rung if the agent is still silent, and sets the
// timer of the next. Each rung's event id derives from the agent's last
// word, so a timer delivered twice climbs once.
func (ck *clock) onAgentTimer(ctx context.Context, f timer.Fired) error {
	var at agentTimer
	if err := json.Unmarshal(f.Payload, &at); err != nil || at.TaskID == "" {
		ck.logger.Error("agent timer with a bad payload; dropping it", "id", f.ID, "err", err)
		return nil
	}
	err := ck.tasks.Write(ctx, at.TaskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		w := agentWaitsOf(t.Contract)
		if w.ask <= 0 || !task.Active(t.Status) {
			return nil, nil
		}
		rung, due := nextRung(t, w)
		if rung == "" || ck.now().Before(due) {
			return nil, nil // it spoke since: armed again below
		}
		return ck.climb(t, rung)
	})
	if err != nil {
		if eventlog.Permanent(err) {
			ck.logger.Warn("agent timer could not act", "task", at.TaskID, "err", err)
			return nil
		}
		return err
	}
	t, _, err := ck.tasks.Load(ctx, at.TaskID)
	if err != nil {
		return err
	}
	return ck.armAgentOf(ctx, t, f.ID)
}

// climb is the event of rung for t's silent agent.
func (ck *clock) climb(t *stewardv1.Task, rung string) (*stewardv1.Event, error) {
	taskID := t.Contract.GetTaskId()
	silent := task.AgentSilentFor(t, ck.now()).Round(time.Second)
	meta := event.Meta{ID: event.ID(taskID, "agent-"+rung, fmt.Sprint(t.AgentSeenAt.AsTime().UnixNano())), TaskID: taskID,
		Actor: &stewardv1.Actor{Principal: "steward", Plane: PlaneName}, Time: ck.now()}
	switch rung {
	case rungAsk:
		return event.New(meta, &stewardv1.AgentAsked{Question: task.AgentQuestion, SilentFor: durationpb.New(silent)})
	case rungEscalate:
		k := t.Contract
		owners := []string{k.GetRequesterRef()}
		if o := k.GetAccountableOwnerRef(); o != "" && o != owners[0] {
			owners = append(owners, o)
		}
		ck.logger.Warn("a task's agent is silent; its owners are told", "task", taskID, "owners", owners, "silent", silent)
		return event.New(meta, &stewardv1.AgentEscalated{Owners: owners, SilentFor: durationpb.New(silent)})
	}
	return event.New(meta, &stewardv1.TaskSuspended{Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_AGENT_SILENT,
		Reason: fmt.Sprintf("its agent has said nothing for %s: its next word resumes the task", shortDuration(silent))})
}
