package e2e_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/state"
)

// Nothing strands silently (DESIGN rule 10): a task whose next step was
// lost — its event acknowledged by a plane that did nothing with it — is
// marked stalled by the state plane's watchdog once it has been quiet for
// the re-drive bound, and the plane that owns the step does it again.
// Each test strands one step with a fault, shows it stays stranded, then
// moves the watchdog's clock to the bound and waits for the step.

// ignore is a reaction that acknowledges its event and does nothing: the
// fault.
func ignore(context.Context, *stewardv1.EventRecord) error { return nil }

// strand runs do with plane's durable consumer in the hands of reactions
// that acknowledge their events and do nothing, then gives it back: the
// plane, started after, finds its consumer already past what do
// appended, as after a reaction that acked and lost its work.
func strand(t *testing.T, env *stewardtest.Env, plane string, do func(), reactions ...eventlog.Reaction) {
	t.Helper()
	sub, err := env.Log.React(context.Background(), plane, reactions...)
	if err != nil {
		t.Fatal(err)
	}
	do()
	env.Settle(plane)
	sub.Stop()
}

// watchdog starts a state plane whose watchdog judges quiet by the
// clock it returns, set at from, looking every 10 ms.
func watchdog(t *testing.T, env *stewardtest.Env, from time.Time) *stewardtest.Clock {
	t.Helper()
	clk := &stewardtest.Clock{}
	clk.Set(from)
	st := state.New(env.Log, env.Logger, state.Config{StallCheckEvery: 10 * time.Millisecond, Now: clk.Now})
	if err := st.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	return clk
}

// loggedTo returns a logger that writes to out and to the test's log.
func loggedTo(t *testing.T, out *stewardtest.LogBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(teeWriter{out, t}, nil))
}

type teeWriter struct {
	out *stewardtest.LogBuffer
	t   *testing.T
}

func (w teeWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return w.out.Write(p)
}

// lastUpdate returns when task taskID last changed, as the log has it.
func lastUpdate(t *testing.T, env *stewardtest.Env, taskID string) time.Time {
	t.Helper()
	tk, _, err := env.Tasks.Load(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	return tk.UpdatedAt.AsTime()
}

// markedOnce checks that task taskID was marked stalled once, by the
// state plane, for what says names, and that the step the mark re-drove
// was caused by it.
func markedOnce(t *testing.T, env *stewardtest.Env, taskID, says, redrove string) {
	t.Helper()
	recs, err := env.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	var mark *stewardv1.Event
	for _, r := range recs {
		if r.Event.Type == event.TypeTaskStalled {
			if mark != nil {
				t.Fatalf("task %s marked stalled twice", taskID)
			}
			mark = r.Event
		}
	}
	if mark == nil || mark.Actor.GetPlane() != state.PlaneName || !strings.Contains(mark.GetTaskStalled().Reason, says) {
		t.Fatalf("task %s: stall mark %v, want one by the state plane saying %q", taskID, mark, says)
	}
	t.Logf("%s: %s", taskID, mark.GetTaskStalled().Reason)
	for _, r := range recs {
		if r.Event.Type == redrove && r.Event.CausationId != mark.EventId {
			t.Errorf("task %s: %s caused by %s, want the stall mark %s", taskID, redrove, r.Event.CausationId, mark.EventId)
		}
	}
}

// TestAStrandedTaskIsStarted: a task whose creation the control plane
// acknowledged without starting it stays pending; once it has been quiet
// for the re-drive bound it is marked, and control starts it, once.
func TestAStrandedTaskIsStarted(t *testing.T) {
	const id = "t-stranded-start"
	env := stewardtest.NewEnv(t)
	strand(t, env, control.PlaneName, func() {
		env.Append(id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: id, Intent: "test"}})
	}, eventlog.OnRecord[*stewardv1.TaskCreated](ignore))
	var out stewardtest.LogBuffer
	ctl := control.New(env.Log, loggedTo(t, &out), control.Config{})
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctl.Stop)
	env.Settle(control.PlaneName)
	quiet := lastUpdate(t, env, id)
	clk := watchdog(t, env, quiet)
	if n := env.Count(id, event.TypeTaskStarted); n != 0 {
		t.Fatalf("the fault did not strand the task: %d starts", n)
	}

	clk.Set(quiet.Add(state.DefaultRedriveAfter))
	env.WaitTask(id, func(t *stewardv1.Task) bool { return t.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING })
	markedOnce(t, env, id, "not started", event.TypeTaskStarted)
	env.Settle(control.PlaneName)
	if n := env.Count(id, event.TypeTaskStarted); n != 1 {
		t.Errorf("%d starts, want 1", n)
	}
	if !strings.Contains(out.String(), "re-driving a stalled task") {
		t.Errorf("control logged no warning of the re-drive:\n%s", out.String())
	}
}

// TestAProposalGovernanceNeverSawIsDecided: a proposal whose event
// governance acknowledged without deciding stays proposed; at the
// re-drive bound governance decides it (real OPA: the default policy
// allows the charge) and the call goes out, once.
func TestAProposalGovernanceNeverSawIsDecided(t *testing.T) {
	const id = "t-stranded-proposal"
	g := newGovernedPlanes(t, stewardtest.OK)
	g.start(g.execution(g.Logger, nil))
	var actionID string
	strand(t, g.Env, governance.PlaneName, func() { actionID = g.propose(id) },
		eventlog.OnRecord[*stewardv1.ActionProposed](ignore))
	out := g.loggedGovernance(t)
	quiet := lastUpdate(t, g.Env, id)
	clk := watchdog(t, g.Env, quiet)
	if a := g.WaitAction(id, actionID, func(*stewardv1.Action) bool { return true }); a.Status != stewardv1.ActionStatus_ACTION_STATUS_PROPOSED {
		t.Fatalf("the fault did not strand the proposal: it is %v", a.Status)
	}

	clk.Set(quiet.Add(state.DefaultRedriveAfter))
	a := g.WaitAction(id, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))
	markedOnce(t, g.Env, id, "governance has not decided on it", event.TypeActionPermitted)
	g.Settle(governance.PlaneName, execution.PlaneName)
	if n := g.Count(id, event.TypeActionPermitted); n != 1 || g.tool.Executions(a.OpKey) != 1 {
		t.Errorf("%d permits, the work done %d times; want each once", n, g.tool.Executions(a.OpKey))
	}
	if !strings.Contains(out.String(), "re-driving a stalled task") {
		t.Errorf("governance logged no warning of the re-drive:\n%s", out.String())
	}
}

// TestAPermitNoWorkerClaimedIsReoffered: a permit whose event the
// execution workers acknowledged without claiming it stays permitted; at
// the re-drive bound the takeover offers it again, and it runs once.
func TestAPermitNoWorkerClaimedIsReoffered(t *testing.T) {
	const id = "t-stranded-permit"
	g := newGovernedPlanes(t, stewardtest.OK)
	exec := g.execution(g.Logger, nil) // the tool registered, the plane not started
	g.startGovernance()
	var actionID string
	strand(t, g.Env, execution.PlaneName, func() {
		actionID = g.propose(id)
		g.WaitAction(id, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_PERMITTED))
	}, eventlog.OnRecord[*stewardv1.ActionPermitted](ignore))
	g.start(exec)
	g.Settle(execution.PlaneName)
	quiet := lastUpdate(t, g.Env, id)
	clk := watchdog(t, g.Env, quiet)
	if a := g.WaitAction(id, actionID, func(*stewardv1.Action) bool { return true }); a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED {
		t.Fatalf("the fault did not strand the permit: it is %v", a.Status)
	}

	clk.Set(quiet.Add(state.DefaultRedriveAfter))
	a := g.WaitAction(id, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))
	markedOnce(t, g.Env, id, "no worker claimed it", event.TypeActionDispatched)
	g.Settle(execution.PlaneName)
	if n := g.Count(id, event.TypeActionDispatched); n != 1 || g.tool.Calls() != 1 || g.tool.Executions(a.OpKey) != 1 {
		t.Errorf("%d dispatches, %d calls, the work done %d times; want each once", n, g.tool.Calls(), g.tool.Executions(a.OpKey))
	}
}

// TestAnApprovalGovernanceNeverActedOnIsPermitted: an approval decided
// while governance's reaction to the decision was lost leaves the action
// approved with no permit; at the re-drive bound governance takes the
// decision from the log, evaluates policy again as after any approval,
// and permits the action, which runs once. (That an open approval is
// not marked at the re-drive bound is the state plane's test:
// TestRedriveBoundMarksWhatShouldMoveByItself.)
func TestAnApprovalGovernanceNeverActedOnIsPermitted(t *testing.T) {
	const id = "t-stranded-approval"
	g := newGovernedPlanes(t, stewardtest.OK)
	g.addPolicy(`approval_reasons contains "a person signs charges" if input.action.tool == "charge"`)
	g.start(g.execution(g.Logger, nil))
	first := g.startGovernance()
	actionID := g.propose(id)
	a := g.WaitAction(id, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL))
	g.Settle(governance.PlaneName)
	first.Stop()
	strand(t, g.Env, governance.PlaneName, func() {
		g.Append(id, &stewardv1.ApprovalDecided{ApprovalId: a.Approval.ApprovalId, ActionId: actionID, ActionHash: a.ActionHash,
			Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:ann"})
	}, eventlog.OnRecord[*stewardv1.ApprovalDecided](ignore))
	out := g.loggedGovernance(t)
	quiet := lastUpdate(t, g.Env, id)
	clk := watchdog(t, g.Env, quiet)
	if a := g.WaitAction(id, actionID, func(*stewardv1.Action) bool { return true }); a.Status != stewardv1.ActionStatus_ACTION_STATUS_APPROVED {
		t.Fatalf("the fault did not strand the approval: the action is %v", a.Status)
	}

	clk.Set(quiet.Add(state.DefaultRedriveAfter))
	done := g.WaitAction(id, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))
	markedOnce(t, g.Env, id, "no permit followed", "")
	g.Settle(governance.PlaneName, execution.PlaneName)
	if n := g.Count(id, event.TypeActionPermitted); n != 1 || g.tool.Executions(done.OpKey) != 1 {
		t.Errorf("%d permits, the work done %d times; want each once", n, g.tool.Executions(done.OpKey))
	}
	if !strings.Contains(out.String(), "re-driving a stalled task") {
		t.Errorf("governance logged no warning of the re-drive:\n%s", out.String())
	}
}

// loggedGovernance starts the governance plane, after a fault stranded
// something, with its log kept for the test to read, and waits until it
// has handled what is on the log.
func (g *governedPlanes) loggedGovernance(t *testing.T) *stewardtest.LogBuffer {
	t.Helper()
	var out stewardtest.LogBuffer
	gov := governance.New(g.Log, loggedTo(t, &out), governance.Config{Engine: g.engine, Tools: g.Tools, Requests: g.Requests})
	if err := gov.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gov.Stop)
	g.Settle(governance.PlaneName)
	return &out
}
