package control_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

// submitContent submits content inline as artifact name of taskID, by
// principal.
func submitContent(ctl *control.Plane, principal, taskID, name string, content []byte) error {
	_, _, err := ctl.SubmitArtifact(context.Background(), principal, &stewardv1.SubmitArtifactRequest{TaskId: taskID, Name: name, MediaType: "text/plain", Content: content})
	return err
}

// TestEndedTaskStoresNoContent: an artifact an ended task refuses stores
// nothing, so refusals cannot fill the store past the content quota.
func TestEndedTaskStoresNoContent(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	ctl := r.withQuotas(t, control.Quotas{ContentBytesPerTenant: 1000})
	id := r.acceptanceTask(t, "ended", nil)
	if _, err := ctl.CancelTask(ctx, "agent", &stewardv1.CancelTaskRequest{TaskId: id, Reason: "done with it"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []byte("abc") {
		content := bytes.Repeat([]byte{b}, 600)
		if err := submitContent(ctl, "agent", id, "late", content); !errs.Is(err, errs.FailedPrecondition) {
			t.Fatalf("an artifact for a cancelled task: %v, want FailedPrecondition", err)
		}
		hash := action.RequestHash(content)
		if _, err := r.Results.Get(ctx, action.Ref(action.ResultBucket, id, hash), hash); err == nil {
			t.Fatal("the refused artifact's content was stored")
		}
	}
}

// TestContentIsChargedToItsSubmitter: stored content counts against the
// principal that submits it, not the task's creator, and content the
// store holds already (the same bytes again, under any name) is not
// charged again.
func TestContentIsChargedToItsSubmitter(t *testing.T) {
	r := newHarness(t)
	ctl := r.withQuotas(t, control.Quotas{ContentBytesPerPrincipal: 1000})
	id := r.acceptanceTask(t, "shared", nil)
	first := bytes.Repeat([]byte("a"), 600)
	if err := submitContent(ctl, "agent:one", id, "a", first); err != nil {
		t.Fatal(err)
	}
	if err := submitContent(ctl, "agent:two", id, "b", bytes.Repeat([]byte("b"), 600)); err != nil {
		t.Fatalf("another submitter on the same task: %v", err)
	}
	if err := submitContent(ctl, "agent:one", id, "again", first); err != nil {
		t.Fatalf("the same content again, which the store holds once: %v", err)
	}
	refusedQuota(t, submitContent(ctl, "agent:one", id, "c", bytes.Repeat([]byte("c"), 600)),
		`quota "stored content bytes per principal" (1000) reached: principal "agent:one" holds 600, and this request would add 600`)
}

// TestPlanSubTasksAreAdmittedWithThePlan: a plan's sub-tasks are not
// refused when they are delegated, so SubmitPlan admits the most its
// steps may delegate against its submitter's running-task quota: a
// foreach of 5 sub-tasks is refused under a quota of 2 (the task itself
// is 1), and records nothing; one of 1 goes through.
func TestPlanSubTasksAreAdmittedWithThePlan(t *testing.T) {
	r := newHarness(t)
	ctl := r.withQuotas(t, control.Quotas{RunningTasksPerPrincipal: 2})
	id := r.planTask(t, "fan-out", nil)
	fanOut := func(version, items uint32) *stewardv1.Plan {
		return &stewardv1.Plan{Version: version, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{{Id: "each",
			Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "['" + strings.Join(strings.Split("abcde", "")[:items], "', '") + "']", MaxItems: items,
				Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_SubTask{SubTask: subStep("x", nil, 10).GetSubTask()}}}}}}}
	}
	_, _, err := ctl.SubmitPlan(context.Background(), "agent", &stewardv1.SubmitPlanRequest{TaskId: id, Plan: fanOut(1, 5)})
	refusedQuota(t, err, `quota "running tasks per principal" (2) reached: principal "agent" holds 1, and this request would add 5`)
	if n := r.planEvents(t, id); n != 0 {
		t.Fatalf("refused plan: %d PlanSubmitted events, want 0", n)
	}
	if _, _, err := ctl.SubmitPlan(context.Background(), "agent", &stewardv1.SubmitPlanRequest{TaskId: id, Plan: fanOut(1, 1)}); err != nil {
		t.Fatalf("a foreach of 1 sub-task beside the task itself: %v", err)
	}
}

// TestQuotaRefusalWritesNothing: a create refused by a quota is refused
// before its request id is claimed, so it writes nothing: no claim of
// the id, and no release of it; a retry of a request answered before is still answered.
func TestQuotaRefusalWritesNothing(t *testing.T) {
	r := idleHarness(t)
	ctx := context.Background()
	ctl := r.withQuotas(t, control.Quotas{RunningTasksPerPrincipal: 1})
	if _, _, err := ctl.CreateTask(ctx, "alice", validRequest("one")); err != nil {
		t.Fatal(err)
	}
	last := func() uint64 {
		s, err := r.JS.Stream(ctx, "KV_"+eventlog.DefaultFirstUseBucket)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	before := last()
	_, _, err := ctl.CreateTask(ctx, "alice", validRequest("two"))
	refusedQuota(t, err, `quota "running tasks per principal" (1) reached`)
	if after := last(); after != before {
		t.Fatalf("the refused create wrote %d request-id records", after-before)
	}
	if _, created, err := ctl.CreateTask(ctx, "alice", validRequest("one")); err != nil || created {
		t.Fatalf("a retry at the quota: created %v, %v; want the task, not created", created, err)
	}
}
