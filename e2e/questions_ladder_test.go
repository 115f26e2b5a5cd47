package e2e_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
	"github.com/steward-run/steward/services/state"
)

// Questions that nobody answers (docs/input.md, "When nobody answers"),
// with the control and governance planes in one process on the kit's
// environment, meeting only on its log. Governance's clock runs an hour
// ahead, so that a question's rungs an hour and a few seconds after it
// is asked come a few seconds after.

// ladderPlanes starts control and governance (real OPA, the default
// bundle, durable timers, a signer for credentials, its clock an hour
// ahead).
func ladderPlanes(t *testing.T) (*stewardtest.Env, *control.Plane) {
	t.Helper()
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	ctl := control.New(env.Log, env.Logger, control.Config{Tasks: env.Tasks, Tools: env.Tools, Requests: env.Requests, Results: env.Results, Timers: env.Timers})
	engine, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var clk stewardtest.Clock
	clk.Advance(time.Hour)
	gov := governance.New(env.Log, env.Logger, governance.Config{Tasks: env.Tasks, Engine: engine, Tools: env.Tools, Requests: env.Requests,
		Timers: env.Timers, Signer: credential.NewSigner(key), Now: clk.Now})
	for _, p := range []interface{ Start(context.Context) error }{ctl, gov} {
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(gov.Stop)
	t.Cleanup(ctl.Stop)
	return env, ctl
}

// ladderTask creates a running task whose questions go to user:bo, on
// the ladder given (after the reminder at an hour).
func ladderTask(t *testing.T, env *stewardtest.Env, ctl *control.Plane, requestID string, escalate, suspend time.Duration) string {
	t.Helper()
	tk, _, err := ctl.CreateTask(context.Background(), "agent:a", &stewardv1.CreateTaskRequest{RequestId: requestID, Contract: &stewardv1.TaskContract{
		Intent: "sync", DesiredOutcome: "synced", RequesterRef: "user:req", AccountableOwnerRef: "user:req", RiskTier: stewardv1.RiskTier_RISK_TIER_LOW,
		InputBackupRef: "user:bo", Timers: &stewardv1.TaskTimers{InputRemindAfter: durationpb.New(time.Hour),
			InputEscalateAfter: durationpb.New(escalate), InputSuspendAfter: durationpb.New(suspend)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	env.WaitTask(id, func(tk *stewardv1.Task) bool {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.Credential != nil
	})
	return id
}

// TestAQuestionClimbsItsLadder: the agent's question, asked of the
// requester, reminds them; the backup may not answer it yet; it escalates
// to the backup and suspends the task, each once, on the log and told on
// the timeline; the backup's answer then resumes the task. A plan
// checkpoint's question is reminded and escalated alike, and the backup's
// answer ends its step.
func TestAQuestionClimbsItsLadder(t *testing.T) {
	env, ctl := ladderPlanes(t)
	ctx := context.Background()
	bo := rpc.Identity{Principal: "user:bo"}
	id := ladderTask(t, env, ctl, "asked", time.Hour+3*time.Second, time.Hour+6*time.Second)
	if _, err := ctl.RequestInput(ctx, "agent:a", &stewardv1.RequestInputRequest{TaskId: id, Question: "Which region?", AskRef: "user:req"}); err != nil {
		t.Fatal(err)
	}
	env.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.OpenInput.GetRemindedAt() != nil })
	answer := &stewardv1.ProvideInputRequest{TaskId: id, Answer: "eu"}
	if _, err := ctl.ProvideInput(ctx, bo, answer); errs.CodeOf(err) != errs.PermissionDenied {
		t.Fatalf("the backup answering before the escalation: %v; want refused", err)
	}
	tk := env.WaitTask(id, task.SuspendedForInput)
	if tk.OpenInput.GetEscalatedTo() != "user:bo" {
		t.Fatalf("suspended with the question %v; want it escalated to user:bo", tk.OpenInput)
	}
	tellsOnce(t, env, id, map[string]string{
		event.TypeInputReminded:  "whom it asks were reminded",
		event.TypeInputEscalated: "it went to the backup, user:bo, who may answer it now",
		event.TypeTaskSuspended:  "its question waited too long",
	})
	if tk, err := ctl.ProvideInput(ctx, bo, answer); err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("the backup answering the escalated question: %v, %v; want the task running", tk.GetStatus(), err)
	}

	plan := ladderTask(t, env, ctl, "checkpoint", time.Hour+3*time.Second, 3*time.Hour)
	if _, _, err := ctl.SubmitPlan(ctx, "agent:a", &stewardv1.SubmitPlanRequest{TaskId: plan, Plan: &stewardv1.Plan{
		Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{{Id: "go",
			Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Go ahead?", Choices: []string{"yes", "no"}}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	env.WaitTask(plan, func(tk *stewardv1.Task) bool {
		return tk.OpenInput.GetEscalatedTo() == "user:bo" && tk.OpenInput.GetRemindedAt() != nil
	})
	if _, err := ctl.ProvideInput(ctx, bo, &stewardv1.ProvideInputRequest{TaskId: plan, Answer: "yes"}); err != nil {
		t.Fatal(err)
	}
	env.WaitTask(plan, func(tk *stewardv1.Task) bool {
		return task.FindStep(tk, "go").GetStatus() == stewardv1.StepStatus_STEP_STATUS_SUCCEEDED
	})
}

// tellsOnce checks that task id's timeline tells each event type of want
// once, its sentence holding want's words.
func tellsOnce(t *testing.T, env *stewardtest.Env, id string, want map[string]string) {
	t.Helper()
	recs, err := env.Log.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	told := map[string][]string{}
	for _, e := range state.Timeline(recs) {
		told[e.Type] = append(told[e.Type], e.Summary)
	}
	for typ, words := range want {
		if len(told[typ]) != 1 || !strings.Contains(told[typ][0], words) {
			t.Errorf("the timeline tells %s as %q; want it once, saying %q", typ, told[typ], words)
		}
	}
}
