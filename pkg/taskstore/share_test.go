package taskstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

func sizedTask(tb testing.TB, n int) []event.Payload {
	tb.Helper()
	h := []event.Payload{&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x", AllowedTools: []string{"t"}}}, &stewardv1.TaskStarted{}}
	for i := range n {
		a := fmt.Sprintf("a%d", i)
		h = append(h,
			&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: a, Tool: "t", Target: "x", ActionHash: "h" + a, RequestHash: "r" + a}},
			&stewardv1.PolicyEvaluated{ActionId: a, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s" + a, Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY, Reasons: []string{"no"}}})
	}
	return h
}

// TestLoadedActionsStayAsTheyWere: a task Load returned shares its action
// entries with the fold, which replaces an entry rather than change it,
// so the caller's copy still shows the action as it was after the fold
// moves on; and a caller that changes a shared action is caught.
func TestLoadedActionsStayAsTheyWere(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	stewardtest.Append(t, log, "t1", sizedTask(t, 2)...)
	before, _, err := tasksOf(log).Load(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	stewardtest.Append(t, log, "t1", &stewardv1.ActionDenied{ActionId: "a0", Reasons: []string{"no"}})
	after, _, err := tasksOf(log).Load(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got, now := before.Actions[0].Status, after.Actions[0].Status; got != stewardv1.ActionStatus_ACTION_STATUS_EVALUATED || now != stewardv1.ActionStatus_ACTION_STATUS_DENIED {
		t.Fatalf("action a0 read before its denial is %v, after %v; want evaluated, denied", got, now)
	}
	if before.Actions[1] != after.Actions[1] {
		t.Error("an action no event touched is copied on every Load; want it shared")
	}

	if !taskstore.GuardLent {
		return // the check is built with the race detector
	}
	after.Actions[1].Target = "elsewhere" // what a caller must not do
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "action a1 of task t1") {
			t.Fatalf("a changed shared action went unnoticed: %v", r)
		}
	}()
	_, _, _ = tasksOf(log).Load(ctx, "t1")
}

// TestLoadedPartsStayAsTheyWere: the parts of a task Load returned (its
// contract, its progress) are shared with the fold, not copied on every
// Load; the fold replaces the part an event changes, so the caller's
// copy keeps what it read; and a caller that changes a shared part is
// caught.
func TestLoadedPartsStayAsTheyWere(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	stewardtest.Append(t, log, "t1", sizedTask(t, 1)...)
	before, _, err := tasksOf(log).Load(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	stewardtest.Append(t, log, "t1", &stewardv1.ActionDenied{ActionId: "a0", Reasons: []string{"no"}})
	after, _, err := tasksOf(log).Load(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if before.Contract != after.Contract {
		t.Error("the contract is copied on every Load; want it shared")
	}
	if got, now := before.Progress, after.Progress; len(got.GetRemaining()) != 1 || len(now.GetRemaining()) != 0 || len(now.GetFailed()) != 1 {
		t.Fatalf("progress read before the denial is %v, after %v; want a0 remaining, then failed", got, now)
	}

	if !taskstore.GuardLent {
		return // the check is built with the race detector
	}
	after.Contract.Intent = "elsewhere" // what a caller must not do
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "contract of task t1") {
			t.Fatalf("a changed shared contract went unnoticed: %v", r)
		}
	}()
	_, _, _ = tasksOf(log).Load(ctx, "t1")
}

// TestWrittenEventsStayAsTheyWere: the fold keeps the messages of an
// event a write handed over, without a copy (its action's retry policy
// is the one the task shows); folding later events leaves that event as
// it was written; and a writer that changes its event after is caught.
func TestWrittenEventsStayAsTheyWere(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	stewardtest.Append(t, log, "t1", sizedTask(t, 0)...)
	propose := func(id string, retry *stewardv1.RetryPolicy) *stewardv1.Event {
		t.Helper()
		ev := stewardtest.Event(t, "t1", &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, Tool: "t", Target: "x", ActionHash: "h" + id, RequestHash: "r" + id, RetryPolicy: retry}})
		if err := tasksOf(log).Write(ctx, "t1", func(*stewardv1.Task) (*stewardv1.Event, error) { return ev, nil }); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	retry := &stewardv1.RetryPolicy{MaxAttempts: 2}
	proposed := propose("a1", retry)
	written := proto.CloneOf(proposed)
	stewardtest.Append(t, log, "t1", &stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY}},
		&stewardv1.ActionDenied{ActionId: "a1", Reasons: []string{"no"}})
	got, _, err := tasksOf(log).Load(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if a := task.FindAction(got, "a1"); a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_DENIED || a.RetryPolicy != retry {
		t.Fatalf("action a1 is %v with retry policy %p; want denied, with the written event's %p", a.GetStatus(), a.GetRetryPolicy(), retry)
	}
	if !proto.Equal(proposed, written) {
		t.Fatalf("folding later events changed the event a write handed over:\n got %v\nwant %v", proposed, written)
	}

	if !taskstore.GuardLent {
		return // the check is built with the race detector
	}
	retry = &stewardv1.RetryPolicy{MaxAttempts: 2}
	propose("a2", retry)
	retry.MaxAttempts = 9 // what a writer must not do
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "action a2 of task t1") {
			t.Fatalf("a written event changed after went unnoticed: %v", r)
		}
	}()
	_, _, _ = tasksOf(log).Load(ctx, "t1")
}

// BenchmarkLoadBySize measures a Load of a task it has seen before, with
// nothing new on the log, by the size of its ledger. Run:
//
//	go test -run '^$' -bench LoadBySize ./pkg/taskstore/
func BenchmarkLoadBySize(b *testing.B) {
	for _, n := range []int{1, 300} {
		b.Run(fmt.Sprintf("actions=%d", n), func(b *testing.B) {
			log, _ := stewardtest.OpenLog(b)
			ctx := context.Background()
			stewardtest.Append(b, log, "sized", sizedTask(b, n)...)
			for b.Loop() {
				if _, _, err := tasksOf(log).Load(ctx, "sized"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
