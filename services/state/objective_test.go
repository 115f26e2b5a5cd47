package state_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/objective"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// appendObjective records payloads on objective id's chain, each on the
// head the chain has.
func appendObjective(t *testing.T, log *eventlog.Log, id string, payloads ...event.Payload) {
	t.Helper()
	ctx := context.Background()
	for _, p := range payloads {
		recs, err := log.ReadObjective(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		o, err := objective.Fold(recs)
		if err != nil {
			t.Fatal(err)
		}
		head := eventlog.Head{}
		if o != nil {
			head = eventlog.Head{Sequence: o.LastSequence, Hash: o.LastHash}
		}
		if _, err := log.Append(ctx, head, stewardtest.Event(t, id, p)); err != nil {
			t.Fatal(err)
		}
	}
}

// objectiveContract is a contract of a task of objective q3, delegated
// from parent when it is not empty.
func objectiveContract(intent, parent string) *stewardv1.TaskContract {
	return &stewardv1.TaskContract{Intent: intent, DesiredOutcome: "done", RequesterRef: "user:req", AccountableOwnerRef: "user:ana",
		AcceptanceOwnerRef: stewardtest.Principal, RiskTier: stewardv1.RiskTier_RISK_TIER_LOW, ObjectiveId: "q3", ParentTaskId: parent}
}

// withObjective makes objective q3 with three tasks and a reservation for
// a task never created:
//
//	t1   accepted   spent 100 tokens, 5 micros
//	t2   running    reserved 40 for t2s, spent nothing itself
//	t2s  running    delegated from t2, spent 30
//	t9   of no objective
//
// and objective g1 of tenant globex.
func withObjective(t *testing.T, env *stewardtest.Env) {
	t.Helper()
	appendObjective(t, env.Log, "q3",
		&stewardv1.ObjectiveCreated{Objective: &stewardv1.Objective{ObjectiveId: "q3", OwnerRef: "user:ana", Intent: "ship Q3",
			Budget: &stewardv1.ObjectiveBudget{MaxTokens: 1000}}},
		&stewardv1.ObjectiveTaskAdded{TaskId: "t1", Tokens: 200},
		&stewardv1.ObjectiveTaskAdded{TaskId: "t2", Tokens: 300},
		&stewardv1.ObjectiveTaskAdded{TaskId: "ghost", Tokens: 100})
	appendObjective(t, env.Log, "g1",
		&stewardv1.ObjectiveCreated{Objective: &stewardv1.Objective{ObjectiveId: "g1", OwnerRef: "user:gus", Intent: "theirs", Tenant: "globex"}})
	env.Append("t1", &stewardv1.TaskCreated{Contract: objectiveContract("one", "")}, &stewardv1.TaskStarted{},
		&stewardv1.BudgetConsumed{Tokens: 100, CostMicros: 5, Source: "model:m"},
		&stewardv1.TaskProduced{Round: 1, ReviewRequired: true}, &stewardv1.TaskAccepted{Round: 1})
	env.Append("t2", &stewardv1.TaskCreated{Contract: objectiveContract("two", "")}, &stewardv1.TaskStarted{},
		&stewardv1.BudgetConsumed{Tokens: 40, Source: task.DelegationReserveSource + "t2s"})
	env.Append("t2s", &stewardv1.TaskCreated{Contract: objectiveContract("two's part", "t2")}, &stewardv1.TaskStarted{},
		&stewardv1.BudgetConsumed{Tokens: 30, Source: "model:m"})
	other := objectiveContract("elsewhere", "")
	other.ObjectiveId = ""
	env.Append("t9", &stewardv1.TaskCreated{Contract: other})
}

// TestObjectiveViewAggregatesItsTasks: GetObjective counts every task of
// the objective, sub-tasks included, by status; sums what they spent
// themselves (a reservation for a sub-task is not spent twice); counts
// the accepted and the reservations without a task; and pages its tasks.
func TestObjectiveViewAggregatesItsTasks(t *testing.T) {
	env := stewardtest.NewEnv(t)
	withObjective(t, env)
	q, _ := serveState(t, env)
	ctx := context.Background()
	resp, err := q.GetObjective(ctx, connect.NewRequest(&stewardv1.GetObjectiveRequest{ObjectiveId: "q3", PageSize: 2}))
	if err != nil {
		t.Fatal(err)
	}
	o, p := resp.Msg.Objective, resp.Msg.Progress
	if o.ReservedTokens != 600 || o.TasksAdded != 3 || o.Status != stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN {
		t.Errorf("objective %v", o)
	}
	if p.Tasks != 3 || p.SpentTokens != 130 || p.SpentCostMicros != 5 || p.Accepted != 1 || p.ReservationsWithoutTask != 1 {
		t.Errorf("progress %v, want 3 tasks, 130 tokens, 5 micros, 1 accepted, 1 reservation without a task", p)
	}
	want := map[stewardv1.TaskStatus]uint32{stewardv1.TaskStatus_TASK_STATUS_ACCEPTED: 1, stewardv1.TaskStatus_TASK_STATUS_RUNNING: 2}
	if len(p.Statuses) != len(want) {
		t.Errorf("statuses %v, want %v", p.Statuses, want)
	}
	for _, s := range p.Statuses {
		if want[s.Status] != s.Count {
			t.Errorf("%v: %d, want %d", s.Status, s.Count, want[s.Status])
		}
	}
	var listed []string
	for _, tk := range resp.Msg.Tasks {
		listed = append(listed, tk.Contract.TaskId)
	}
	next, err := q.GetObjective(ctx, connect.NewRequest(&stewardv1.GetObjectiveRequest{ObjectiveId: "q3", PageSize: 2, PageToken: resp.Msg.NextPageToken}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range next.Msg.Tasks {
		listed = append(listed, tk.Contract.TaskId)
	}
	if got := joined(listed); got != "t1 t2 t2s" || next.Msg.NextPageToken != "" {
		t.Errorf("tasks %s (token %q), want t1 t2 t2s over two pages", got, next.Msg.NextPageToken)
	}
}

// TestAnotherTenantsObjectiveIsNotFound: a caller (here of the default
// tenant) finds no objective of globex's, nor lists it.
func TestAnotherTenantsObjectiveIsNotFound(t *testing.T) {
	env := stewardtest.NewEnv(t)
	withObjective(t, env)
	q, _ := serveState(t, env)
	_, err := q.GetObjective(context.Background(), connect.NewRequest(&stewardv1.GetObjectiveRequest{ObjectiveId: "g1"}))
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("another tenant's objective: %v, want not found", err)
	}
	list, err := q.ListObjectives(context.Background(), connect.NewRequest(&stewardv1.ListObjectivesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Msg.Objectives) != 1 || list.Msg.Objectives[0].ObjectiveId != "q3" {
		t.Fatalf("listed %v, want q3 alone", list.Msg.Objectives)
	}
	closed, err := q.ListObjectives(context.Background(), connect.NewRequest(&stewardv1.ListObjectivesRequest{
		Statuses: []stewardv1.ObjectiveStatus{stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE}}))
	if err != nil || len(closed.Msg.Objectives) != 0 {
		t.Fatalf("done objectives: %v %v, want none", closed.Msg.GetObjectives(), err)
	}
}

// TestListTasksFiltersByObjective: the objective_id filter lists the
// objective's tasks, sub-tasks included, and no other.
func TestListTasksFiltersByObjective(t *testing.T) {
	env := stewardtest.NewEnv(t)
	withObjective(t, env)
	q, _ := serveState(t, env)
	if got := joined(ids(t, q, &stewardv1.ListTasksRequest{ObjectiveId: "q3"})); got != "t1 t2 t2s" {
		t.Fatalf("tasks of q3: %s, want t1 t2 t2s", got)
	}
	if got := joined(ids(t, q, &stewardv1.ListTasksRequest{ObjectiveId: "q4"})); got != "" {
		t.Fatalf("tasks of q4: %s, want none", got)
	}
}

// joined is ids, space-separated.
func joined(ids []string) string { return strings.Join(ids, " ") }
