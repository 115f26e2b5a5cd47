package control_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/objective"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/control"
)

// caller is a verified caller of tenant.
func caller(principal, tenant string, roles ...string) context.Context {
	return rpc.WithIdentity(context.Background(), rpc.Identity{Principal: principal, Tenant: tenant, Roles: roles, Verified: true})
}

// newObjective makes an objective of user:ana's in tenant acme with a
// budget of tokens.
func newObjective(t *testing.T, r *harness, requestID string, tokens int64) *stewardv1.Objective {
	t.Helper()
	o, created, err := r.ctl.CreateObjective(caller("user:ana", "acme"), "user:ana", &stewardv1.CreateObjectiveRequest{
		RequestId: requestID, Intent: "ship the Q3 report", Budget: &stewardv1.ObjectiveBudget{MaxTokens: tokens}})
	if err != nil || !created {
		t.Fatalf("create objective: created %v, %v", created, err)
	}
	return o
}

// forObjective is a CreateTask request of a task of objective id with a
// budget of tokens.
func forObjective(requestID, id string, tokens int64) *stewardv1.CreateTaskRequest {
	req := validRequest(requestID)
	req.Contract.ObjectiveId = id
	req.Contract.Budget = &stewardv1.Budget{MaxTokens: tokens}
	return req
}

// TestCreateObjectiveIsIdempotent: the same request again is the same
// objective, not a second one; another body under the id is refused.
func TestCreateObjectiveIsIdempotent(t *testing.T) {
	r := idleHarness(t)
	o := newObjective(t, r, "q3", 100)
	again, created, err := r.ctl.CreateObjective(caller("user:ana", "acme"), "user:ana", &stewardv1.CreateObjectiveRequest{
		RequestId: "q3", Intent: "ship the Q3 report", Budget: &stewardv1.ObjectiveBudget{MaxTokens: 100}})
	if err != nil || created || again.ObjectiveId != o.ObjectiveId {
		t.Fatalf("retry: %v created %v id %s, want %s not created", err, created, again.GetObjectiveId(), o.ObjectiveId)
	}
	_, _, err = r.ctl.CreateObjective(caller("user:ana", "acme"), "user:ana", &stewardv1.CreateObjectiveRequest{
		RequestId: "q3", Intent: "something else"})
	if !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("another body under the id: %v, want already exists", err)
	}
	if o.OwnerRef != "user:ana" || o.Tenant != "acme" || o.Status != stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN {
		t.Fatalf("objective %v", o)
	}
}

// TestObjectiveBudgetRefusesTheTaskPastIt: tasks reserve their budgets
// out of the objective's; the one that would pass it is refused naming
// its budget, and a retried CreateTask reserves once.
func TestObjectiveBudgetRefusesTheTaskPastIt(t *testing.T) {
	r := idleHarness(t)
	o := newObjective(t, r, "q3", 100)
	ctx := caller("user:ana", "acme")
	for range 2 { // the second is a retry
		if _, _, err := r.ctl.CreateTask(ctx, "user:ana", forObjective("a", o.ObjectiveId, 60)); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := r.ctl.CreateTask(ctx, "user:ana", forObjective("b", o.ObjectiveId, 50))
	if !errs.Is(err, errs.Invalid) || !asField(err, "contract.budget.max_tokens") {
		t.Fatalf("past the objective's budget: %v, want invalid naming contract.budget.max_tokens", err)
	}
	if _, _, err := r.ctl.CreateTask(ctx, "user:ana", forObjective("c", o.ObjectiveId, 40)); err != nil {
		t.Fatalf("the last 40: %v", err)
	}
	got := fold(t, r, o.ObjectiveId)
	if got.ReservedTokens != 100 || got.TasksAdded != 2 {
		t.Fatalf("reserved %d for %d tasks, want 100 for 2", got.ReservedTokens, got.TasksAdded)
	}
	_, _, err = r.ctl.CreateTask(ctx, "user:ana", forObjective("d", o.ObjectiveId, 0))
	if !asField(err, "contract.budget.max_tokens") {
		t.Fatalf("no cap under a limiting objective: %v", err)
	}
}

// TestRacingTasksCannotBothTakeTheLastShare: many CreateTasks race for an
// objective's budget, which holds three of them: three are made, the
// rest refused, and the reservations add up to the budget.
func TestRacingTasksCannotBothTakeTheLastShare(t *testing.T) {
	r := idleHarness(t)
	o := newObjective(t, r, "q3", 90)
	var wg sync.WaitGroup
	var mu sync.Mutex
	made, refused := 0, 0
	for i := range 8 {
		wg.Go(func() {
			_, _, err := r.ctl.CreateTask(caller("user:ana", "acme"), "user:ana", forObjective(fmt.Sprint("race-", i), o.ObjectiveId, 30))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made++
			case asField(err, "contract.budget.max_tokens"):
				refused++
			default:
				t.Errorf("race %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if got := fold(t, r, o.ObjectiveId); made != 3 || refused != 5 || got.ReservedTokens != 90 {
		t.Fatalf("made %d, refused %d, reserved %d; want 3, 5, 90", made, refused, got.ReservedTokens)
	}
}

// TestNamingAnObjectiveNeedsItsOwnerItsTenantAndOpen: another tenant's
// caller finds no objective; a stranger of its tenant may not name it,
// an operator may; a closed one takes no task.
func TestNamingAnObjectiveNeedsItsOwnerItsTenantAndOpen(t *testing.T) {
	r := idleHarness(t)
	o := newObjective(t, r, "q3", 0)
	cases := []struct {
		name string
		ctx  context.Context
		who  string
		code errs.Code
	}{
		{"another tenant", caller("user:ana", "globex"), "user:ana", errs.NotFound},
		{"a stranger", caller("user:cy", "acme"), "user:cy", errs.PermissionDenied},
	}
	for _, c := range cases {
		_, _, err := r.ctl.CreateTask(c.ctx, c.who, forObjective("x-"+c.name, o.ObjectiveId, 10))
		if !errs.Is(err, c.code) || !asField(err, "contract.objective_id") {
			t.Errorf("%s: %v, want %v naming contract.objective_id", c.name, err, c.code)
		}
	}
	if _, _, err := r.ctl.CreateTask(caller("user:ops", "acme", access.Operator), "user:ops", forObjective("ops", o.ObjectiveId, 10)); err != nil {
		t.Errorf("an operator: %v", err)
	}
	if _, err := r.ctl.CloseObjective(caller("user:cy", "acme"), "user:cy", &stewardv1.CloseObjectiveRequest{
		ObjectiveId: o.ObjectiveId, Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE, Reason: "r"}); !errs.Is(err, errs.PermissionDenied) {
		t.Errorf("a stranger closes: %v", err)
	}
	if _, err := r.ctl.CloseObjective(caller("user:ana", "globex"), "user:ana", &stewardv1.CloseObjectiveRequest{
		ObjectiveId: o.ObjectiveId, Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE, Reason: "r"}); !errs.Is(err, errs.NotFound) {
		t.Errorf("another tenant closes: %v", err)
	}
	closed, err := r.ctl.CloseObjective(caller("user:ana", "acme"), "user:ana", &stewardv1.CloseObjectiveRequest{
		ObjectiveId: o.ObjectiveId, Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_ABANDONED, Reason: "priorities changed"})
	if err != nil || closed.Status != stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_ABANDONED || closed.ClosedBy != "user:ana" {
		t.Fatalf("close: %v %v", closed, err)
	}
	_, _, err = r.ctl.CreateTask(caller("user:ana", "acme"), "user:ana", forObjective("late", o.ObjectiveId, 10))
	if !errs.Is(err, errs.FailedPrecondition) || !asField(err, "contract.objective_id") {
		t.Errorf("a closed objective: %v", err)
	}
}

// asField reports whether err is a domain error naming field.
func asField(err error, field string) bool {
	var e *errs.Error
	return errors.As(err, &e) && e.Field == field
}

// fold is objective id as its chain says now.
func fold(t *testing.T, r *harness, id string) *stewardv1.Objective {
	t.Helper()
	recs, err := r.Log.ReadObjective(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	o, err := objective.Fold(recs)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestObjectiveCommandsNameTheBadField: a bad CreateObjective or
// CloseObjective is refused naming its field, and records nothing.
func TestObjectiveCommandsNameTheBadField(t *testing.T) {
	r := idleHarness(t)
	ctx := caller("user:ana", "acme")
	long := string(make([]byte, 5000))
	for field, req := range map[string]*stewardv1.CreateObjectiveRequest{
		"intent":                 {},
		"desired_outcome":        {Intent: "i", DesiredOutcome: long},
		"owner_ref":              {Intent: "i", OwnerRef: long},
		"request_id":             {Intent: "i", RequestId: long},
		"budget.max_tokens":      {Intent: "i", Budget: &stewardv1.ObjectiveBudget{MaxTokens: -1}},
		"budget.max_cost_micros": {Intent: "i", Budget: &stewardv1.ObjectiveBudget{MaxCostMicros: -1}},
		"budget.currency":        {Intent: "i", Budget: &stewardv1.ObjectiveBudget{MaxCostMicros: 5}},
	} {
		if _, _, err := r.ctl.CreateObjective(ctx, "user:ana", req); !asField(err, field) {
			t.Errorf("%s: %v, want it named", field, err)
		}
	}
	o := newObjective(t, r, "q3", 0)
	for field, req := range map[string]*stewardv1.CloseObjectiveRequest{
		"objective_id": {Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE, Reason: "r"},
		"status":       {ObjectiveId: o.ObjectiveId, Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN, Reason: "r"},
		"reason":       {ObjectiveId: o.ObjectiveId, Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE},
	} {
		if _, err := r.ctl.CloseObjective(ctx, "user:ana", req); !asField(err, field) {
			t.Errorf("%s: %v, want it named", field, err)
		}
	}
	if got := fold(t, r, o.ObjectiveId); got.Status != stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN {
		t.Fatalf("a refused close closed it: %v", got)
	}
	bad := validRequest("bad-ref")
	bad.Contract.ObjectiveId = "not an id"
	if _, _, err := r.ctl.CreateTask(ctx, "user:ana", bad); !asField(err, "contract.objective_id") {
		t.Errorf("a malformed objective id: %v", err)
	}
}

// TestSubTasksInheritTheObjective: a sub-task works for its parent's
// objective, reserving nothing of it; naming another is refused.
func TestSubTasksInheritTheObjective(t *testing.T) {
	d := idleHarness(t)
	ctx := caller("user:ana", "")
	o, _, err := d.ctl.CreateObjective(ctx, "user:ana", &stewardv1.CreateObjectiveRequest{Intent: "q3", Budget: &stewardv1.ObjectiveBudget{MaxTokens: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	k := parentContract()
	k.ObjectiveId = o.ObjectiveId
	tk, _, err := d.ctl.CreateTask(ctx, "user:ana", &stewardv1.CreateTaskRequest{RequestId: "parent", Contract: k})
	if err != nil {
		t.Fatal(err)
	}
	d.issue(t, tk, credential.Root(tk.Contract, tk.CreatedBy, time.Now(), time.Hour))
	req := &stewardv1.DelegateTaskRequest{ParentTaskId: tk.Contract.TaskId, Contract: subContract(), DelegateRef: "agent:researcher", RequestId: "sub"}
	sub, _, err := d.ctl.DelegateTask(ctx, "user:ana", req)
	if err != nil || sub.Contract.ObjectiveId != o.ObjectiveId {
		t.Fatalf("sub-task: %v, objective %q, want %s", err, sub.GetContract().GetObjectiveId(), o.ObjectiveId)
	}
	if got := fold(t, d, o.ObjectiveId); got.ReservedTokens != 1000 || got.TasksAdded != 1 {
		t.Fatalf("objective reserved %d for %d tasks; the sub-task spends out of its parent's 1000", got.ReservedTokens, got.TasksAdded)
	}
	other := subContract()
	other.ObjectiveId = "another"
	req = &stewardv1.DelegateTaskRequest{ParentTaskId: tk.Contract.TaskId, Contract: other, DelegateRef: "agent:researcher", RequestId: "sub-2"}
	if _, _, err := d.ctl.DelegateTask(ctx, "user:ana", req); !asField(err, "contract.objective_id") {
		t.Fatalf("a sub-task naming another objective: %v", err)
	}
}

// TestTwoPlanesShareAnObjectivesBudget: two control planes over one log
// (replicas) each keep the objective folded; each reads what the other
// reserved before it reserves, so together they stay within the budget,
// and a retry through the other plane reserves nothing more.
func TestTwoPlanesShareAnObjectivesBudget(t *testing.T) {
	r := idleHarness(t)
	other := control.New(r.Log, r.Logger, r.config())
	t.Cleanup(other.Stop)
	o := newObjective(t, r, "q3", 100)
	ctx := caller("user:ana", "acme")
	if _, _, err := r.ctl.CreateTask(ctx, "user:ana", forObjective("a", o.ObjectiveId, 60)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.CreateTask(ctx, "user:ana", forObjective("b", o.ObjectiveId, 30)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.ctl.CreateTask(ctx, "user:ana", forObjective("c", o.ObjectiveId, 20)); !asField(err, "contract.budget.max_tokens") {
		t.Fatalf("past what the other plane left: %v", err)
	}
	if _, _, err := other.CreateTask(ctx, "user:ana", forObjective("a", o.ObjectiveId, 60)); err != nil {
		t.Fatalf("a retry through the other plane: %v", err)
	}
	if got := fold(t, r, o.ObjectiveId); got.ReservedTokens != 90 || got.TasksAdded != 2 {
		t.Fatalf("reserved %d for %d tasks, want 90 for 2", got.ReservedTokens, got.TasksAdded)
	}
}

// TestObjectiveRetryCannotGrowItsReservation: a CreateTask that reserved
// its share and died before its task was written frees its request id;
// a retry under it with a larger budget must not find "reserved already"
// and take more than was reserved.
func TestObjectiveRetryCannotGrowItsReservation(t *testing.T) {
	r := idleHarness(t)
	o := newObjective(t, r, "q3", 100)
	ctx := caller("user:ana", "acme")
	if err := r.ctl.ReserveForRequest(ctx, "user:ana", "a", forObjective("a", o.ObjectiveId, 10).Contract); err != nil {
		t.Fatal(err)
	}
	_, _, err := r.ctl.CreateTask(ctx, "user:ana", forObjective("a", o.ObjectiveId, 100))
	if !asField(err, "contract.budget") {
		t.Fatalf("a retry with 100 tokens where 10 were reserved: %v, want a refusal naming contract.budget", err)
	}
	if _, _, err := r.ctl.CreateTask(ctx, "user:ana", forObjective("a", o.ObjectiveId, 10)); err != nil {
		t.Fatalf("the retry with the budget reserved: %v", err)
	}
}
