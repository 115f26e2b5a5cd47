package control_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/control"
)

// withQuotas is a second control plane over the harness's log and stores,
// with quotas q; it runs no reactions, and counts what the log holds.
func (r *harness) withQuotas(t *testing.T, q control.Quotas) *control.Plane {
	cfg := r.config()
	cfg.Quotas = q
	p := control.New(r.Log, r.Logger, cfg)
	t.Cleanup(p.Stop)
	return p
}

// refusedQuota fails t unless err is QuotaExceeded naming quota (limit).
func refusedQuota(t *testing.T, err error, quota string) {
	t.Helper()
	if !errs.Is(err, errs.QuotaExceeded) || !strings.Contains(err.Error(), quota) {
		t.Fatalf("got %v, want QuotaExceeded naming %s", err, quota)
	}
}

// TestRunningTaskQuotas: a principal's and a tenant's running tasks are
// bounded; a refused CreateTask records nothing and keeps no request id,
// so the same request succeeds once a task ends and frees its slot; a
// new plane (a restart, another replica) counts the same from the log.
func TestRunningTaskQuotas(t *testing.T) {
	r := idleHarness(t)
	ctx := context.Background()
	ctl := r.withQuotas(t, control.Quotas{RunningTasksPerPrincipal: 2, RunningTasksPerTenant: 3})
	var alice []string
	for _, id := range []string{"a1", "a2"} {
		tk, _, err := ctl.CreateTask(ctx, "alice", validRequest(id))
		if err != nil {
			t.Fatal(err)
		}
		alice = append(alice, tk.Contract.TaskId)
	}
	_, _, err := ctl.CreateTask(ctx, "alice", validRequest("a3"))
	refusedQuota(t, err, `quota "running tasks per principal" (2) reached`)
	third := control.TaskIDFor("alice", "a3")
	if _, _, err := r.Tasks.Load(ctx, third); !errs.Is(err, errs.NotFound) {
		t.Fatalf("refused task %s: %v, want nothing recorded", third, err)
	}
	if _, _, err := ctl.CreateTask(ctx, "bob", validRequest("b1")); err != nil {
		t.Fatal(err)
	}
	_, _, err = ctl.CreateTask(ctx, "bob", validRequest("b2"))
	refusedQuota(t, err, `quota "running tasks per tenant" (3) reached: the default tenant holds 3`)

	// A retry of a task made already is answered, at the quota's end too.
	if _, created, err := ctl.CreateTask(ctx, "alice", validRequest("a1")); err != nil || created {
		t.Fatalf("retry at the quota: created %v, %v; want the task, not created", created, err)
	}

	// A restart: a new plane counts from the log.
	restarted := r.withQuotas(t, control.Quotas{RunningTasksPerPrincipal: 2, RunningTasksPerTenant: 3})
	_, _, err = restarted.CreateTask(ctx, "alice", validRequest("a3"))
	refusedQuota(t, err, `quota "running tasks per principal" (2) reached`)

	if _, err := restarted.CancelTask(ctx, "alice", &stewardv1.CancelTaskRequest{TaskId: alice[0], Reason: "done with it"}); err != nil {
		t.Fatal(err)
	}
	if _, created, err := restarted.CreateTask(ctx, "alice", validRequest("a3")); err != nil || !created {
		t.Fatalf("after a cancel, the same request: created %v, %v; want created", created, err)
	}
	_, _, err = restarted.CreateTask(ctx, "alice", validRequest("a4"))
	refusedQuota(t, err, `quota "running tasks per principal" (2) reached`)
}

// TestPlanBytesQuota: the plans of a principal's running tasks are
// bounded in bytes; a revision replaces its task's share; a refused plan
// records nothing; an ended task frees its plan's share.
func TestPlanBytesQuota(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	one := int64(proto.Size(twoSteps(1)))
	ctl := r.withQuotas(t, control.Quotas{PlanBytesPerPrincipal: one + 10})
	first, second := r.planTask(t, "p1", nil), r.planTask(t, "p2", nil)
	submit := func(taskID string, p *stewardv1.Plan) error {
		_, _, err := ctl.SubmitPlan(ctx, "agent", &stewardv1.SubmitPlanRequest{TaskId: taskID, Plan: p})
		return err
	}
	if err := submit(first, twoSteps(1)); err != nil {
		t.Fatal(err)
	}
	if err := submit(first, twoSteps(2)); err != nil { // a revision, the same size
		t.Fatalf("a revision: %v", err)
	}
	refusedQuota(t, submit(second, twoSteps(1)), `quota "plan bytes per principal"`)
	if n := r.planEvents(t, second); n != 0 {
		t.Fatalf("refused plan: %d PlanSubmitted events, want 0", n)
	}
	if _, err := ctl.CancelTask(ctx, "agent", &stewardv1.CancelTaskRequest{TaskId: first, Reason: "replaced"}); err != nil {
		t.Fatal(err)
	}
	r.WaitTask(first, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_CANCELLED })
	if err := submit(second, twoSteps(1)); err != nil {
		t.Fatalf("after the first task ended: %v", err)
	}
}

// TestContentQuota: artifact content stored for a tenant is bounded; a
// refused artifact is neither recorded nor stored.
func TestContentQuota(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	ctl := r.withQuotas(t, control.Quotas{ContentBytesPerTenant: 1000})
	id := r.acceptanceTask(t, "content", nil)
	submit := func(name string, content []byte) error {
		_, _, err := ctl.SubmitArtifact(ctx, "agent", &stewardv1.SubmitArtifactRequest{TaskId: id, Name: name, MediaType: "text/plain", Content: content})
		return err
	}
	if err := submit("a", bytes.Repeat([]byte("a"), 600)); err != nil {
		t.Fatal(err)
	}
	second := bytes.Repeat([]byte("b"), 600)
	refusedQuota(t, submit("b", second), `quota "stored content bytes per tenant" (1000) reached: the default tenant holds 600, and this request would add 600`)
	if n := len(r.task(t, id).Artifacts); n != 1 {
		t.Fatalf("%d artifacts recorded, want 1", n)
	}
	hash := action.RequestHash(second)
	if _, err := r.Results.Get(ctx, action.Ref(action.ResultBucket, id, hash), hash); err == nil {
		t.Fatal("the refused artifact's content was stored")
	}
}

// TestConcurrentCreatesKeepTheQuota: creates racing on one plane take
// the quota's slots exactly; none passes it.
func TestConcurrentCreatesKeepTheQuota(t *testing.T) {
	r := idleHarness(t)
	ctl := r.withQuotas(t, control.Quotas{RunningTasksPerPrincipal: 5})
	const racers = 20
	errc := make(chan error, racers)
	for i := range racers {
		go func() {
			_, _, err := ctl.CreateTask(context.Background(), "alice", validRequest(fmt.Sprint("c", i)))
			errc <- err
		}()
	}
	created := 0
	for range racers {
		switch err := <-errc; {
		case err == nil:
			created++
		case !errs.Is(err, errs.QuotaExceeded):
			t.Fatal(err)
		}
	}
	if created != 5 {
		t.Fatalf("%d tasks created, want 5", created)
	}
}

// TestDelegationQuota: DelegateTask is held to the running-task quotas
// before it reserves anything on its parent: a refused delegation writes
// nothing on either task.
func TestDelegationQuota(t *testing.T) {
	d := idleHarness(t)
	ctx := context.Background()
	ctl := d.withQuotas(t, control.Quotas{RunningTasksPerTenant: 2})
	parent := d.parent(t, "parent", time.Now(), 0)
	delegate := func(requestID string) error {
		_, _, err := ctl.DelegateTask(ctx, "agent:lead", &stewardv1.DelegateTaskRequest{
			ParentTaskId: parent.Contract.TaskId, Contract: subContract(), DelegateRef: "agent:researcher", RequestId: requestID})
		return err
	}
	if err := delegate("sub-1"); err != nil {
		t.Fatal(err)
	}
	before := d.task(t, parent.Contract.TaskId).EventCount
	refusedQuota(t, delegate("sub-2"), `quota "running tasks per tenant" (2) reached`)
	if after := d.task(t, parent.Contract.TaskId).EventCount; after != before {
		t.Fatalf("the refused delegation wrote %d events on its parent", after-before)
	}
}

// TestQuotasAreEachTenants: a tenant at its quota does not hold back
// another, nor does one tenant's principal count against the same name
// in another tenant.
func TestQuotasAreEachTenants(t *testing.T) {
	r := idleHarness(t)
	ctl := r.withQuotas(t, control.Quotas{RunningTasksPerPrincipal: 1, RunningTasksPerTenant: 1})
	in := func(tenant string) context.Context {
		return rpc.WithIdentity(context.Background(), rpc.Identity{Principal: "user:ana", Tenant: tenant, Verified: true})
	}
	if _, _, err := ctl.CreateTask(in("acme"), "user:ana", validRequest("one")); err != nil {
		t.Fatal(err)
	}
	_, _, err := ctl.CreateTask(in("acme"), "user:ana", validRequest("two"))
	refusedQuota(t, err, `quota "running tasks per principal" (1) reached: principal "user:ana" holds 1`)
	if _, _, err := ctl.CreateTask(in("globex"), "user:ana", validRequest("two")); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
}
