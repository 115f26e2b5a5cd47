package governance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestRevokingADeletedScheduleWithoutACredential: a schedule deleted
// before governance issued its credential has none to revoke, and gets
// none; the refusal says so at once rather than that the schedule "kept
// changing" after retrying a write it never makes.
func TestRevokingADeletedScheduleWithoutACredential(t *testing.T) {
	e := newHarness(t)
	e.appendSchedule(t, "sch-d", "user:ana", event.PlaneControl, &stewardv1.ScheduleCreated{
		Spec:     &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}},
		Template: &stewardv1.ScheduleTemplate{Contract: credContract([]string{"search"}, nil)},
	})
	e.appendSchedule(t, "sch-d", "user:ana", event.PlaneControl, &stewardv1.ScheduleDeleted{Reason: "gone"})
	e.start(t)
	_, err := e.plane.RevokeCredential(context.Background(), rpc.Identity{Principal: "user:ana", Verified: true},
		&stewardv1.RevokeCredentialRequest{ScheduleId: "sch-d", Reason: "r"})
	if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "deleted") {
		t.Errorf("revoking a deleted schedule without a credential: %v, want failed_precondition saying it was deleted", err)
	}
}

// TestARunBeforeItsSchedulesCredential: a run whose TaskCreated governance
// reads before the schedule's creation was reacted to (both on the log
// before the plane starts) gets a credential delegated from the
// schedule's, issued first, once.
func TestARunBeforeItsSchedulesCredential(t *testing.T) {
	e := newHarness(t)
	e.appendSchedule(t, "sch-r", "user:ana", event.PlaneControl, &stewardv1.ScheduleCreated{
		Spec:     &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}},
		Template: &stewardv1.ScheduleTemplate{Contract: credContract([]string{"search"}, nil)},
	})
	e.createRun(t, "sch-r", "run-r", credContract([]string{"search"}, nil))
	e.start(t)
	cs := e.credentialed("run-r")
	s := e.waitSchedule(t, "sch-r", func(s *stewardv1.Schedule) bool { return s.Credential != nil })
	if len(cs.Chain) != 1 || cs.Credential.ParentCredentialId != s.Credential.Credential.CredentialId || s.Credential.Renewals != 0 {
		t.Errorf("run credential %v (chain %d) under schedule credential %v", cs.Credential, len(cs.Chain), s.Credential)
	}
}

// TestScheduleRevocationClosesRunsApprovals: an action of a run that
// waits for approval when its schedule's credential is revoked is denied,
// as one under a revoked parent task's is.
func TestScheduleRevocationClosesRunsApprovals(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	tmpl := credContract([]string{"search", "wire"}, []string{"payments:write"})
	e.appendSchedule(t, "sch-w", "user:ana", event.PlaneControl, &stewardv1.ScheduleCreated{
		Spec:     &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}},
		Template: &stewardv1.ScheduleTemplate{Contract: tmpl},
	})
	e.createRun(t, "sch-w", "run-w", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	e.credentialed("run-w")
	wire := e.propose(t, "run-w", "w1", "wire")
	e.waitStatus("run-w", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, err := e.plane.RevokeCredential(context.Background(), rpc.Identity{Principal: "user:ana", Verified: true},
		&stewardv1.RevokeCredentialRequest{ScheduleId: "sch-w", Reason: "leaked"}); err != nil {
		t.Fatal(err)
	}
	if a := e.waitStatus("run-w", wire, stewardv1.ActionStatus_ACTION_STATUS_DENIED); !strings.Contains(denialOf(a), "schedule sch-w") {
		t.Errorf("the run's waiting action: %q", denialOf(a))
	}
}
