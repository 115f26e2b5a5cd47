package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
	"github.com/steward-run/steward/services/state"
	"github.com/steward-run/steward/services/state/notify"
)

const stallSecret = "whsec_c3Rld2FyZCBzdGFsbCBzaW5rIHNlY3JldCE="

// TestAStalledTaskIsSuspendedAnnouncedAndResumed runs the control,
// governance and state planes on embedded JetStream, each with its own
// clock, and a webhook sink: a task whose agent stopped proposing (not
// watched, nothing in flight, nothing any plane can re-drive) is marked
// stalled at its stall_after, and the sink is told (task.stalled); the
// mark stands for stall_suspend_after, so governance suspends the task
// (SUSPEND_CAUSE_STALLED), and the sink is told that too
// (task.suspended, with the command that resumes it); a person's
// ResumeTask lets it go on, and it is not marked again at once.
func TestAStalledTaskIsSuspendedAnnouncedAndResumed(t *testing.T) {
	const id = "t-stalled-suspended"
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	ops := startReceiver(t)
	sinks := writeFile(t, t.TempDir(), "sinks.json", fmt.Sprintf(`{"sinks": [
	  {"name": "ops", "url": %q, "kinds": ["task.stalled", "task.suspended"], "secrets": [%q]}]}`, ops.srv.URL, stallSecret))
	n, err := notify.New(notify.Config{Log: env.Log, Tasks: env.Tasks, File: sinks, Reload: 20 * time.Millisecond, Logger: env.Logger})
	if err != nil {
		t.Fatal(err)
	}
	watch := &stewardtest.Clock{}
	watch.Set(time.Now())
	st := state.New(env.Log, env.Logger, state.Config{Tasks: env.Tasks, StallCheckEvery: 10 * time.Millisecond, Now: watch.Now, Notify: n})
	if err := st.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		_, err := env.JS.Consumer(ctx, env.Log.Config().Stream, notify.Consumer("ops"))
		return err == nil, fmt.Sprintf("the sink has no consumer yet: %v", err)
	})
	engine, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	// Governance's clock runs ahead, past where the mark's suspension
	// comes due: its timer fires as soon as it is set.
	gov := &stewardtest.Clock{}
	gov.Advance(3 * time.Minute)
	g := governance.New(env.Log, env.Logger, governance.Config{Tasks: env.Tasks, Engine: engine, Tools: env.Tools, Requests: env.Requests, Timers: env.Timers, Now: gov.Now})
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Stop)
	ctl := control.New(env.Log, env.Logger, control.Config{Tasks: env.Tasks})
	if err := ctl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctl.Stop)

	env.Append(id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: id, Intent: "sync", RequesterRef: "user:ops",
		Timers: &stewardv1.TaskTimers{StallAfter: durationpb.New(time.Minute), StallSuspendAfter: durationpb.New(time.Minute)}}})
	tk := env.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING })
	watch.Set(tk.UpdatedAt.AsTime().Add(time.Minute))

	stalled := ops.waitTaken(t, "ops", "task.stalled", id)
	tk = env.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED })
	if tk.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_STALLED || !strings.Contains(tk.StatusReason, "nothing was proposed since") {
		t.Fatalf("suspended for %s (%q); want the stall, and what its mark said", tk.SuspendedFor, tk.StatusReason)
	}
	suspended := ops.waitTaken(t, "ops", "task.suspended", id)
	if suspended.note.Act != "steward tasks resume "+id {
		t.Errorf("the suspension's notification says to act by %q", suspended.note.Act)
	}
	if stalled.note.Sequence >= suspended.note.Sequence {
		t.Errorf("the stall was told at sequence %d, the suspension at %d: want the mark first", stalled.note.Sequence, suspended.note.Sequence)
	}

	tk, err = ctl.ResumeTask(ctx, rpc.Identity{Principal: "user:ops"}, &stewardv1.ResumeTaskRequest{TaskId: id, Reason: "the agent is back"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || tk.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_UNSPECIFIED || tk.StalledSince != nil {
		t.Fatalf("after the resume: %v, suspended for %s, stalled since %v; want running, unmarked", tk.Status, tk.SuspendedFor, tk.StalledSince)
	}
	env.Settle(governance.PlaneName, control.PlaneName)
	if n, m := env.Count(id, event.TypeTaskSuspended), env.Count(id, event.TypeTaskStalled); n != 1 || m != 1 {
		t.Errorf("%d suspensions and %d marks, want one each", n, m)
	}
}
