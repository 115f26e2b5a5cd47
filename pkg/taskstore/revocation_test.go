package taskstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestARunsScheduleRevocationIsFoundAbove: a schedule's run, and a task
// delegated from the run, find the schedule's revoked credential above
// them, naming the schedule and who revoked it; before the revocation,
// and for a task that is no run, nothing is found.
func TestARunsScheduleRevocationIsFoundAbove(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	var head eventlog.Head
	onSchedule := func(plane string, p event.Payload) {
		ev, err := event.New(event.Meta{TaskID: "sch-1", Actor: &stewardv1.Actor{Principal: "user:ana", Plane: plane}}, p)
		if err == nil {
			var rec *stewardv1.EventRecord
			if rec, err = log.Append(ctx, head, ev); err == nil {
				head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	onSchedule(event.PlaneControl, &stewardv1.ScheduleCreated{})
	for i := range 3 {
		onSchedule(event.PlaneControl, &stewardv1.ScheduleFired{Firing: &stewardv1.ScheduleFiring{Disposition: stewardv1.FiringDisposition_FIRING_DISPOSITION_SKIPPED, Reason: string(rune('a' + i))}})
	}
	run := &stewardv1.Task{Contract: &stewardv1.TaskContract{TaskId: "run-1"}, ScheduleRun: &stewardv1.ScheduleRun{ScheduleId: "sch-1"}}
	parent, err := event.New(event.Meta{TaskID: "run-1", Actor: &stewardv1.Actor{Principal: "user:ana", Plane: event.PlaneControl}},
		&stewardv1.TaskCreated{Contract: run.Contract, ScheduleRun: run.ScheduleRun})
	if err == nil {
		_, err = log.Append(ctx, eventlog.Head{}, parent)
	}
	if err != nil {
		t.Fatal(err)
	}
	sub := &stewardv1.Task{Contract: &stewardv1.TaskContract{TaskId: "sub-1", ParentTaskId: "run-1"}}
	plain := &stewardv1.Task{Contract: &stewardv1.TaskContract{TaskId: "plain"}}
	store := tasksOf(log)
	for _, tk := range []*stewardv1.Task{run, sub, plain} {
		if r, err := store.RevokedAbove(ctx, tk); r != nil || err != nil {
			t.Fatalf("%s before the revocation: %v, %v", tk.Contract.TaskId, r, err)
		}
	}
	onSchedule(event.PlaneGovernance, &stewardv1.ScheduleCredentialRevoked{CredentialId: "cred-s", Reason: "leaked"})
	for _, tk := range []*stewardv1.Task{run, sub} {
		why, err := store.Revoked(ctx, tk)
		if err != nil || !strings.Contains(why, "credential cred-s of schedule sch-1 was revoked by user:ana") || !strings.Contains(why, "leaked") {
			t.Errorf("%s after the revocation: %q, %v", tk.Contract.TaskId, why, err)
		}
	}
	if r, err := store.RevokedAbove(ctx, plain); r != nil || err != nil {
		t.Errorf("a task that is no run: %v, %v", r, err)
	}
}
