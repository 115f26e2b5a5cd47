package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
)

// governs appends p to schedule id's chain as governance does.
func (r *schedules) governs(id string, p event.Payload) {
	r.t.Helper()
	ctx := context.Background()
	recs, err := r.Log.ReadSchedule(ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	last := recs[len(recs)-1]
	ev, err := event.New(event.Meta{TaskID: id, Actor: &stewardv1.Actor{Principal: "alice", Plane: event.PlaneGovernance}, Time: r.clock.Now()}, p)
	if err == nil {
		_, err = r.Log.Append(ctx, eventlog.Head{Sequence: last.Sequence, Hash: last.Event.Hash}, ev)
	}
	if err != nil {
		r.t.Fatal(err)
	}
}

// TestScheduleRevokedStopsFiring: once a schedule's credential is revoked
// the schedule shows revoked; the firing that comes due is recorded
// REVOKED and makes no run, and nothing after it is recorded; a run made
// before may no longer delegate, the revocation found above it.
func TestScheduleRevokedStopsFiring(t *testing.T) {
	r := newSchedules(t)
	ctx := context.Background()
	s := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE, 0))
	sc := schedule.Credential(s, r.clock.Now(), 24*time.Hour)
	signed, err := r.signer.Sign(sc)
	if err != nil {
		t.Fatal(err)
	}
	r.governs(s.ScheduleId, &stewardv1.ScheduleCredentialIssued{Credential: signed})
	s = r.tick(s.ScheduleId, time.Hour)
	run := s.LastTaskId
	if got := firings(s, 0); got != "+1h started" || run == "" {
		t.Fatalf("first firing: %s", got)
	}
	rt := r.task(t, run)
	rc, err := r.signer.Sign(credential.Delegated(sc, rt.Contract, "alice", r.clock.Now()))
	if err != nil {
		t.Fatal(err)
	}
	r.Append(run, &stewardv1.CredentialIssued{Credential: rc, Chain: []*stewardv1.SignedCredential{signed}})
	delegate := func(id string) error {
		_, _, err := r.ctl.DelegateTask(ctx, "alice", &stewardv1.DelegateTaskRequest{ParentTaskId: run, Contract: validRequest("").Contract, DelegateRef: "agent:sub", RequestId: id})
		return err
	}
	if err := delegate("before"); err != nil {
		t.Fatalf("delegating from the run before the revocation: %v", err)
	}

	r.governs(s.ScheduleId, &stewardv1.ScheduleCredentialRevoked{CredentialId: sc.CredentialId, Reason: "leaked"})
	s = r.get(s.ScheduleId)
	if s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED || s.NextFiringTime != nil {
		t.Fatalf("revoked schedule: %s, next %v", s.Status, s.NextFiringTime)
	}
	if err := delegate("after"); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "schedule "+s.ScheduleId) {
		t.Errorf("delegating from the run after the revocation: %v", err)
	}
	// Nor fork: a fork is a root task of its own, whose fresh credential
	// no revocation above the run would reach.
	if _, _, err := r.ctl.ForkTask(ctx, "alice", &stewardv1.ForkTaskRequest{TaskId: run, Reason: "again", RequestId: "fork-after"}); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "schedule "+s.ScheduleId) {
		t.Errorf("forking the run after the revocation: %v", err)
	}
	// The run goes on (QUEUE would wait), yet the firing is not queued:
	// it is REVOKED, and the ones after it are not recorded.
	s = r.tick(s.ScheduleId, time.Hour)
	if got := firings(s, 1); got != "+2h revoked" || s.RunsStarted != 1 || r.exists(schedule.RunTaskID(s.ScheduleId, s.RecentFirings[1].FiringTime.AsTime())) {
		t.Fatalf("after the revocation: %q, %d runs", got, s.RunsStarted)
	}
	if !strings.Contains(s.RecentFirings[1].Reason, "leaked") {
		t.Errorf("the REVOKED firing says %q", s.RecentFirings[1].Reason)
	}
	again := r.tick(s.ScheduleId, 3*time.Hour)
	if again.LastSequence != s.LastSequence {
		t.Fatalf("a revoked schedule recorded more: %s", firings(again, 1))
	}
}
