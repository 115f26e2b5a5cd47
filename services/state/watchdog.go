package state

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// DefaultStallAfter is task.DefaultStallAfter, where the rule lives.
const DefaultStallAfter = task.DefaultStallAfter

// DefaultRedriveAfter is how long a task may stay where it should move
// on by itself, with no event — pending, not started; an action proposed
// or evaluated and not decided, approved and not permitted, permitted and
// not claimed, claimed and not dispatched, or revalidating; a plan not
// judged — before it is marked stalled, and the plane that owns the next
// step does it again (docs/stalls.md). It is far above what that step
// takes (a governed action goes from proposal to its outcome in a few
// milliseconds at p99) and above
// a JetStream cluster's leader election (about 10 s), during which
// nothing is appended and nothing is lost: a re-drive then would only
// repeat what redelivery is about to do.
const DefaultRedriveAfter = 30 * time.Second

// DefaultStallCheckEvery is how often the watchdog looks for stalled
// tasks: a task stuck where it should move by itself is marked within
// DefaultRedriveAfter and this.
const DefaultStallCheckEvery = 5 * time.Second

// watchStalls looks for stalled tasks every p.cfg.StallCheckEvery until
// ctx ends, judging quiet by the plane's clock.
//
// A stalled task is a working or pending one with no event for longer
// than its threshold, judged action by action. Two thresholds: the
// re-drive bound (p.cfg.RedriveAfter, capped by the task's own stall
// threshold) for a pending task and for an action that the next step of
// a plane alone moves on — proposed or evaluated and not decided,
// approved and not permitted, permitted and not claimed, claimed and not
// dispatched, revalidating (redrivable) — and the task's stall threshold
// (contract.timers.stall_after) for the rest: an action dispatched with
// no word since, or waiting on a timer that came due. Any such action
// makes the task stalled, whatever else it is waiting on: one action
// waiting for approval does not hide a worker that died mid-call on
// another. Failing that, a task waiting on something it declared — an
// approval, a durable timer not yet due (an action waiting to retry or for
// a breaker), or the settling of an unknown outcome — is not stalled:
// those have their own clocks and people. A task with nothing in flight
// and nothing declared is stalled too: a reaction that keeps failing, an
// agent that stopped proposing. The mark is an event, so every view, watch
// and receipt shows it, the planes that own the next step re-drive it
// (the control plane's start and plan driver, governance's decisions,
// execution's takeover), and the task's next event clears it.
//
// Every state-plane replica runs a watchdog; they mark a task once between
// them, because the mark's id is derived from the task's last event.
func (p *Plane) watchStalls(ctx context.Context) {
	tick := time.NewTicker(p.cfg.StallCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, id := range p.views.quiet(p.cfg.Now(), p.cfg.RedriveAfter) {
			if err := p.markStalled(ctx, id); err != nil && ctx.Err() == nil {
				p.logger.Warn("could not mark a task stalled", "task", id, "err", err)
			}
		}
		p.looks.Add(1)
	}
}

// quiet returns the ids of tasks whose views look stalled at now, with
// the re-drive bound redrive; the caller checks each again against the
// log.
func (p *Projection) quiet(now time.Time, redrive time.Duration) []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []string
	for _, id := range p.order {
		if _, broken := p.broken[id]; broken || id == "" {
			continue // an empty id held a task that left the views (drop)
		}
		if stallReason(p.tasks[id].task, now, redrive) != "" {
			out = append(out, id)
		}
	}
	return out
}

// markStalled appends TaskStalled if the task, as the log has it now, is
// still stalled.
func (p *Plane) markStalled(ctx context.Context, taskID string) error {
	var mark *stewardv1.TaskStalled
	err := p.tasks.Write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		mark = nil
		reason := stallReason(t, p.cfg.Now(), p.cfg.RedriveAfter)
		if reason == "" {
			return nil, nil
		}
		// A copy: the build's task is not ours to keep.
		mark = &stewardv1.TaskStalled{Reason: reason, QuietSince: proto.CloneOf(t.UpdatedAt)}
		return event.New(event.Meta{
			// Derived from the quiet point: replicas, and a retry, agree.
			ID:     event.ID(taskID, "stalled", strconv.FormatUint(t.LastSequence, 10)),
			TaskID: taskID,
			Actor:  &stewardv1.Actor{Principal: "steward", Plane: PlaneName},
			Time:   p.cfg.Now(),
		}, proto.CloneOf(mark))
	})
	if err != nil || mark == nil {
		return err
	}
	p.logger.Warn("task stalled", "task", taskID, "quiet_since", mark.QuietSince.AsTime(), "reason", mark.Reason)
	return nil
}

// stallReason says why t is stalled at now, with the re-drive bound
// redrive, or "" if it is not. It judges each action (see watchStalls): a
// stuck one stalls the task even while others wait on an approval, a
// timer or an unknown outcome; only when none is stuck does a declared
// wait keep the task from being stalled.
func stallReason(t *stewardv1.Task, now time.Time, redrive time.Duration) string {
	pendingTask := t.Status == stewardv1.TaskStatus_TASK_STATUS_PENDING
	if !task.Working(t.Status) && !pendingTask || t.StalledSince != nil || t.UpdatedAt == nil {
		return ""
	}
	quiet, long := now.Sub(t.UpdatedAt.AsTime()), task.StallAfter(t.Contract)
	if redrive <= 0 || redrive > long {
		redrive = long
	}
	if quiet < redrive {
		return ""
	}
	if pendingTask {
		return fmt.Sprintf("no progress for %s; the task was created at %s and not started", quiet.Round(time.Second), stamp(t.CreatedAt.AsTime()))
	}
	// The status follows the ledger; trust it too, should they disagree.
	pending := t.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL
	var stuck, open []*stewardv1.Action
	for _, a := range t.Actions {
		switch {
		case task.ActionEnded(a.Status):
			continue
		// An action a compensating task will not run (not a compensation)
		// is no plane's to move on: only the long bound looks at it.
		case redrivable(a.Status) && task.MayPermit(t, a), quiet >= long && stuckable(a, now):
			stuck = append(stuck, a)
		default:
			pending = pending || declared(a, now)
			open = append(open, a)
		}
	}
	if len(stuck) == 0 && task.PlanUnjudged(t.Plan) {
		return fmt.Sprintf("no progress for %s; plan version %d was submitted and governance has not judged it", quiet.Round(time.Second), t.Plan.Version)
	}
	if len(stuck) == 0 && (pending || quiet < long || task.PlanWaitsDeclared(t, now)) {
		return "" // waiting on something with its own clock, or not for long
	}
	if len(stuck) == 0 && len(open) == 0 && agentsTurn(t) {
		return "" // its agent's silence has a clock of its own: the liveness ladder
	}
	// The first stuck action leads; the rest of what is open follows.
	return fmt.Sprintf("no progress for %s; %s", quiet.Round(time.Second), doing(t, append(stuck, open...)))
}

// agentsTurn reports whether t, running with nothing in flight, waits on
// its agent alone, and its contract watches the agent (docs/liveness.md):
// an agent alive and idle is no stall, and one gone silent is asked,
// escalated and suspended by its own ladder. Not when the control plane
// owes t a step (task.ControlOwes: a plan that runs, a retry to propose):
// that is its to move on, and a reaction that keeps failing is marked and
// re-driven. And only while the ladder can still end a silence: before the
// agent is asked, or to a suspension rung; asked, with none, a dead agent
// would otherwise hide for ever.
func agentsTurn(t *stewardv1.Task) bool {
	tm := t.Contract.GetTimers()
	return t.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tm.GetAgentAskAfter().AsDuration() > 0 &&
		(!task.AgentAsked(t) || tm.GetAgentSuspendAfter().AsDuration() > 0) && !task.ControlOwes(t)
}

// redrivable reports whether an action in s, quiet for the re-drive
// bound, is stuck: the next step of a plane alone moves it on, without
// anyone being asked, any timer running or any call going out.
func redrivable(s stewardv1.ActionStatus) bool {
	switch s {
	case stewardv1.ActionStatus_ACTION_STATUS_PROPOSED,
		stewardv1.ActionStatus_ACTION_STATUS_EVALUATED,
		stewardv1.ActionStatus_ACTION_STATUS_APPROVED,
		stewardv1.ActionStatus_ACTION_STATUS_PERMITTED,
		stewardv1.ActionStatus_ACTION_STATUS_CLAIMED,
		stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING:
		return true
	}
	return false
}

// stuckable reports whether a, quiet for the task's stall threshold, is
// stuck: it should have moved on without anyone being asked or any timer
// running.
func stuckable(a *stewardv1.Action, now time.Time) bool {
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
		return true
	case stewardv1.ActionStatus_ACTION_STATUS_WAITING:
		// Its timer came due and nothing happened.
		return !a.WaitUntil.AsTime().After(now)
	}
	return false
}

// declared reports whether a waits on something with its own clock: an
// approval, the settling of an unknown outcome, a person doing the work
// themselves (they take the time it takes, and settle it), or a timer not
// yet due.
func declared(a *stewardv1.Action, now time.Time) bool {
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL,
		stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN,
		stewardv1.ActionStatus_ACTION_STATUS_PERSON_EXECUTING:
		return true
	case stewardv1.ActionStatus_ACTION_STATUS_WAITING:
		return a.WaitUntil.AsTime().After(now)
	}
	return false
}

// doing says what a quiet task was last doing, for a person to follow up.
func doing(t *stewardv1.Task, open []*stewardv1.Action) string {
	if len(open) == 0 {
		if t.Status == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING {
			return "it is compensating, but no compensation is in flight"
		}
		return "no action is in flight: nothing was proposed since " + stamp(t.UpdatedAt.AsTime())
	}
	a := open[0]
	what := fmt.Sprintf("action %s (%s)", a.ActionId, a.Tool)
	since := stamp(a.GetUpdatedAt().AsTime())
	var s string
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
		s = fmt.Sprintf("%s was dispatched at %s (attempt %d)", what, since, a.Attempt)
		if a.LastHeartbeat != nil {
			s += ", last heartbeat at " + stamp(a.LastHeartbeat.AsTime())
		} else {
			s += " with no heartbeat"
		}
	case stewardv1.ActionStatus_ACTION_STATUS_WAITING:
		s = fmt.Sprintf("%s waited until %s (%s) and was not dispatched again", what, stamp(a.WaitUntil.AsTime()), a.WaitReason)
	case stewardv1.ActionStatus_ACTION_STATUS_CLAIMED:
		s = fmt.Sprintf("%s was claimed by %s at %s and not dispatched", what, orUnknown(a.ClaimedBy), since)
	case stewardv1.ActionStatus_ACTION_STATUS_PERMITTED:
		s = fmt.Sprintf("%s was permitted at %s and no worker claimed it", what, since)
	case stewardv1.ActionStatus_ACTION_STATUS_APPROVED:
		s = fmt.Sprintf("%s was approved at %s and no permit followed", what, since)
	case stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING:
		s = fmt.Sprintf("%s went back to governance at %s, its permit not used, and governance has not decided on it again", what, since)
	case stewardv1.ActionStatus_ACTION_STATUS_PROPOSED, stewardv1.ActionStatus_ACTION_STATUS_EVALUATED:
		s = fmt.Sprintf("%s was proposed at %s and governance has not decided on it", what, stamp(a.GetProposedAt().AsTime()))
	default:
		s = fmt.Sprintf("%s is %s since %s", what, a.Status, since)
	}
	if len(open) > 1 {
		s += fmt.Sprintf(" (and %d more actions are open)", len(open)-1)
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func orUnknown(s string) string {
	if s == "" {
		return "an unknown worker"
	}
	return s
}
