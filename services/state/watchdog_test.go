package state_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// quietAfter is the stall threshold the watchdog tests give their tasks.
const quietAfter = time.Second

func stallContract() *stewardv1.TaskContract {
	k := contract(0)
	k.Timers = &stewardv1.TaskTimers{StallAfter: durationpb.New(quietAfter)}
	return k
}

type step struct {
	name    string
	payload event.Payload
}

// actionUpTo returns the events that take action act-1 of a running task
// as far as the ledger step named upTo.
func actionUpTo(upTo string) []event.Payload {
	const id = "act-1"
	steps := []step{
		{"created", &stewardv1.TaskCreated{Contract: stallContract()}},
		{"started", &stewardv1.TaskStarted{}},
		{"proposed", &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ProposalId: "p1", Tool: "wire", ActionHash: "h", RequestHash: "r"}}},
	}
	run := runSteps(id)
	switch upTo {
	case "awaiting approval":
		steps = append(steps,
			step{"evaluated", &stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}}},
			step{upTo, &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "apv-1", ActionId: id, ActionHash: "h", RequestedAt: timestamppb.Now()}}})
	case "person executing":
		steps = append(steps,
			step{"evaluated", &stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}}},
			step{"awaiting approval", &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "apv-1", ActionId: id, ActionHash: "h", RequestedAt: timestamppb.Now()}}},
			step{upTo, &stewardv1.ApprovalDecided{ApprovalId: "apv-1", ActionId: id, ActionHash: "h", DecidedBy: "user:bo",
				Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES}})
	case "waiting to retry":
		steps = append(append(steps, run...),
			step{upTo, &stewardv1.ActionWaiting{ActionId: id, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Until: timestamppb.New(time.Now().Add(time.Hour))}})
	case "overdue wait":
		steps = append(append(steps, run...),
			step{upTo, &stewardv1.ActionWaiting{ActionId: id, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Until: timestamppb.Now()}})
	case "dispatched from the permit":
		// The first dispatch carries the claim: no ActionClaimed.
		steps = append(append(steps, run[:2]...),
			step{upTo, &stewardv1.ActionDispatched{ActionId: id, Attempt: 1, Worker: "w1", PermitId: "pm-" + id}})
	case "unknown":
		steps = append(append(steps, run...),
			step{upTo, &stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN}}})
	default:
		steps = append(steps, run...)
	}
	var out []event.Payload
	for _, s := range steps {
		out = append(out, s.payload)
		if s.name == upTo {
			break
		}
	}
	return out
}

// runSteps are the ledger steps that take action id from proposed, allowed
// by policy, to its first dispatch.
func runSteps(id string) []step {
	return []step{
		{"evaluated", &stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}}},
		{"permitted", &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm-" + id, ActionId: id, ActionHash: "h", RequestHash: "r"}}},
		{"claimed", &stewardv1.ActionClaimed{ActionId: id, PermitId: "pm-" + id, Worker: "w1"}},
		{"dispatched", &stewardv1.ActionDispatched{ActionId: id, Attempt: 1, Worker: "w1"}},
	}
}

// beside returns the events of a task whose action act-1 awaits approval
// while a second action, act-2 (tool "mail"), is dispatched and, if wait
// is non-zero, then waits to retry until wait from now.
func beside(wait time.Duration) []event.Payload {
	const id = "act-2"
	out := actionUpTo("awaiting approval")
	out = append(out, &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ProposalId: "p2", Tool: "mail", ActionHash: "h", RequestHash: "r"}})
	for _, s := range runSteps(id) {
		out = append(out, s.payload)
	}
	if wait != 0 {
		out = append(out, &stewardv1.ActionWaiting{ActionId: id, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Until: timestamppb.New(time.Now().Add(wait))})
	}
	return out
}

// startWatchdog starts a state plane over env's log that judges quiet by
// clk, looking often, and logs its warnings to out.
func startWatchdog(t *testing.T, env *stewardtest.Env, clk *stewardtest.Clock, out *stewardtest.LogBuffer) *state.Plane {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return startPlane(t, env.Log, logger, state.Config{StallCheckEvery: 10 * time.Millisecond, Now: clk.Now})
}

// lookOnce starts a watchdog whose clock stands past every task's
// threshold (and short of any timer of an hour), and returns once it has
// marked task last, the one created last. A look judges every task at one
// time, in creation order, and the clock stands still: once the last is
// marked, any wrong mark would be on the log, and every mark is in the
// views.
func lookOnce(t *testing.T, env *stewardtest.Env, last string) (*state.Plane, *stewardtest.LogBuffer) {
	t.Helper()
	clk := &stewardtest.Clock{}
	clk.Set(time.Now().Add(quietAfter + time.Second))
	var out stewardtest.LogBuffer
	p := startWatchdog(t, env, clk, &out)
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return env.Count(last, event.TypeTaskStalled) > 0, last + " is not marked stalled"
	})
	if err := eventlog.CatchUp(context.Background(), p.Views(), env.Log.LastTaskSequence); err != nil {
		t.Fatal(err)
	}
	return p, &out
}

// lastMark returns the last stall mark on task taskID, or nil.
func lastMark(t *testing.T, env *stewardtest.Env, taskID string) *stewardv1.TaskStalled {
	t.Helper()
	recs, err := env.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	var last *stewardv1.Event
	for _, r := range recs {
		if r.Event.Type == event.TypeTaskStalled {
			last = r.Event
		}
	}
	if last != nil && last.Actor.GetPlane() != state.PlaneName {
		t.Errorf("%s: stall mark by %v, want the state plane", taskID, last.Actor)
	}
	return last.GetTaskStalled()
}

// TestWatchdogMarksOnlyUndeclaredSilence leaves tasks quiet past their
// threshold: only the ones whose action was dispatched with no heartbeat
// (after a claim, or straight from its permit), the one with nothing in
// flight, the one whose retry timer came due with nothing happening, and
// the one with an action dispatched with no heartbeat beside another
// awaiting approval, are marked, and each once;
// tasks waiting on an approval (alone or beside a retry timer not yet
// due), a retry timer not yet due, the settling of an unknown outcome or
// a person doing the work themselves,
// a paused task, and an idle one whose contract watches its agent (the
// liveness ladder's), are not.
func TestWatchdogMarksOnlyUndeclaredSilence(t *testing.T) {
	env := stewardtest.NewEnv(t)
	// In creation order; "idle", created last, is looked at last.
	histories := []struct {
		id      string
		history []event.Payload
	}{
		{"dispatched", actionUpTo("dispatched")},
		{"dispatched-from-permit", actionUpTo("dispatched from the permit")},
		{"awaiting-approval", actionUpTo("awaiting approval")},
		{"waiting-to-retry", actionUpTo("waiting to retry")},
		{"overdue-wait", actionUpTo("overdue wait")},
		{"unknown", actionUpTo("unknown")},
		{"person-executing", actionUpTo("person executing")},
		{"paused", []event.Payload{&stewardv1.TaskCreated{Contract: stallContract()}, &stewardv1.TaskStarted{}, &stewardv1.TaskPaused{}}},
		{"approval-and-dispatched", beside(0)},
		{"approval-and-waiting", beside(time.Hour)},
		{"watched-idle", []event.Payload{&stewardv1.TaskCreated{Contract: watchedContract()}, &stewardv1.TaskStarted{}}},
		{"idle", []event.Payload{&stewardv1.TaskCreated{Contract: stallContract()}, &stewardv1.TaskStarted{}}},
	}
	for _, h := range histories {
		env.Append(h.id, h.history...)
	}
	p, out := lookOnce(t, env, "idle")
	want := map[string]int{"dispatched": 1, "dispatched-from-permit": 1, "idle": 1, "overdue-wait": 1, "approval-and-dispatched": 1}

	for _, h := range histories {
		id := h.id
		if n := env.Count(id, event.TypeTaskStalled); n != want[id] {
			t.Errorf("%s: %d stall marks, want %d", id, n, want[id])
			continue
		}
		if want[id] == 0 {
			continue
		}
		mark := lastMark(t, env, id)
		view, err := p.Views().Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if view.StalledSince == nil || view.StalledReason != mark.Reason {
			t.Errorf("%s: view stalled since %v (%q), want the mark", id, view.StalledSince, view.StalledReason)
		}
	}
	for _, id := range []string{"dispatched", "dispatched-from-permit"} {
		r := lastMark(t, env, id).GetReason()
		t.Logf("%s: reason: %s", id, r)
		if !strings.Contains(r, "action act-1 (wire) was dispatched at") || !strings.Contains(r, "with no heartbeat") {
			t.Errorf("%s: reason %q does not say what the task was doing", id, r)
		}
	}
	// The stuck action leads, not the one awaiting approval before it.
	if r := lastMark(t, env, "approval-and-dispatched").GetReason(); !strings.Contains(r, "action act-2 (mail) was dispatched at") || !strings.Contains(r, "with no heartbeat") ||
		!strings.Contains(r, "(and 1 more actions are open)") {
		t.Errorf("reason %q does not name the dispatched action", r)
	}
	// The warning follows the mark onto the log.
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		logged := out.String()
		return strings.Count(logged, "task stalled") >= len(want), "logged:\n" + logged
	})
	if logged := out.String(); strings.Count(logged, "task stalled") != len(want) || !strings.Contains(logged, "level=WARN") {
		t.Errorf("want %d warnings, one per mark, logged:\n%s", len(want), logged)
	}
}

// TestNewEventClearsStallMark marks a task stalled, then records a
// heartbeat: the mark is gone from the view at once, and a new quiet
// spell makes a new mark.
func TestNewEventClearsStallMark(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ctx := context.Background()
	env.Append("t1", actionUpTo("dispatched")...)
	clk := &stewardtest.Clock{}
	clk.Set(time.Now().Add(quietAfter + time.Second))
	var out stewardtest.LogBuffer
	p := startWatchdog(t, env, clk, &out)
	waitView(t, p, "t1", func(v *stewardv1.Task) bool { return v.StalledSince != nil })

	// The clock stands before the heartbeat: the task is not quiet.
	clk.Set(time.Now())
	tk := env.Append("t1", &stewardv1.ActionHeartbeat{ActionId: "act-1", Attempt: 1, Beat: 1})
	if err := p.Views().WaitFor(ctx, tk.LastSequence); err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Views().Get("t1"); v.StalledSince != nil || v.StalledReason != "" {
		t.Fatalf("after a heartbeat the view is still stalled: %v %q", v.StalledSince, v.StalledReason)
	}

	clk.Set(tk.UpdatedAt.AsTime().Add(quietAfter + time.Second))
	v := waitView(t, p, "t1", func(v *stewardv1.Task) bool { return v.StalledSince != nil })
	if !v.StalledSince.AsTime().Equal(tk.UpdatedAt.AsTime()) {
		t.Errorf("quiet since %v, want the heartbeat's time %v", v.StalledSince.AsTime(), tk.UpdatedAt.AsTime())
	}
	if !strings.Contains(v.StalledReason, "last heartbeat at") {
		t.Errorf("reason %q does not name the heartbeat", v.StalledReason)
	}
	if n := env.Count("t1", event.TypeTaskStalled); n != 2 {
		t.Errorf("%d stall marks, want 2: one per quiet spell", n)
	}
}

// waitView waits until task id's view satisfies ok, and returns it.
func waitView(t *testing.T, p *state.Plane, id string, ok func(*stewardv1.Task) bool) *stewardv1.Task {
	t.Helper()
	var v *stewardv1.Task
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		var err error
		v, err = p.Views().Get(id)
		return err == nil && ok(v), fmt.Sprintf("task %s's view is %v (%v)", id, v, err)
	})
	return v
}

// watchedContract is stallContract with its agent watched: asked after
// an hour (docs/liveness.md).
func watchedContract() *stewardv1.TaskContract {
	c := stallContract()
	c.Timers.AgentAskAfter = durationpb.New(time.Hour)
	return c
}
