package governance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/schedule"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// appendSchedule appends p to schedule id's chain, as plane for principal.
func (e *harness) appendSchedule(t *testing.T, id, principal, plane string, p event.Payload) {
	t.Helper()
	ctx := context.Background()
	recs, err := e.Log.ReadSchedule(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var head eventlog.Head
	if n := len(recs); n > 0 {
		head = eventlog.Head{Sequence: recs[n-1].Sequence, Hash: recs[n-1].Event.Hash}
	}
	ev, err := event.New(event.Meta{TaskID: id, Actor: &stewardv1.Actor{Principal: principal, Plane: plane}, Time: e.clock.Now()}, p)
	if err == nil {
		_, err = e.Log.Append(ctx, head, ev)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitSchedule waits until schedule id folds to a state ok accepts.
func (e *harness) waitSchedule(t *testing.T, id string, ok func(*stewardv1.Schedule) bool) *stewardv1.Schedule {
	t.Helper()
	var s *stewardv1.Schedule
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		recs, err := e.Log.ReadSchedule(context.Background(), id)
		if err != nil || len(recs) == 0 {
			return false, "no schedule yet"
		}
		if s, err = schedule.Fold(recs); err != nil {
			t.Fatal(err)
		}
		return ok(s), "schedule " + id + " not yet as wanted"
	})
	return s
}

// createRun writes run taskID of schedule id, as the control plane's
// firing does: created by the schedule's creator, naming its schedule.
func (e *harness) createRun(t *testing.T, id, taskID string, c *stewardv1.TaskContract) {
	t.Helper()
	c.TaskId = taskID
	ev, err := event.New(event.Meta{ID: event.ID(taskID, event.TypeTaskCreated), TaskID: taskID, Actor: &stewardv1.Actor{Principal: "user:ana", Plane: event.PlaneControl}},
		&stewardv1.TaskCreated{Contract: c, ScheduleRun: &stewardv1.ScheduleRun{ScheduleId: id, FiringTime: timestamppb.New(e.clock.Now())}})
	if err == nil {
		_, err = e.Log.Append(context.Background(), eventlog.Head{}, ev)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.Append(taskID, &stewardv1.TaskStarted{})
}

// TestScheduleCredential: a schedule gets a credential for its creator at
// creation, bounded by its template; each run's is delegated from it,
// with it in the chain, and verifies offline; across a span longer than
// the credential's ttl, firings (and a run's renewal) renew it so that
// every run acts; revoked
// by its creator (a stranger and another tenant may not), its live run's
// next action is denied, a later run gets no credential and a run's
// credential is not renewed.
func TestScheduleCredential(t *testing.T) {
	e := newHarness(t)
	const ttl = time.Hour
	e.start(t, credentialTTL(ttl))
	ctx := context.Background()
	e.clock.Set(time.Now().Truncate(time.Second))

	template := credContract([]string{"search"}, nil)
	e.appendSchedule(t, "sch-a", "user:ana", event.PlaneControl, &stewardv1.ScheduleCreated{
		Spec:     &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(24 * time.Hour)}},
		Template: &stewardv1.ScheduleTemplate{Contract: template}, Tenant: "acme",
	})
	s := e.waitSchedule(t, "sch-a", func(s *stewardv1.Schedule) bool { return s.Credential != nil })
	sc, err := credential.Verify(s.Credential.Signed, e.signer.PublicKey())
	switch {
	case err != nil:
		t.Fatal(err)
	case sc.Principal != "user:ana" || sc.TaskId != "sch-a" || sc.MaxTokens != 1000 || len(sc.AllowedTools) != 1:
		t.Fatalf("schedule credential = %v", sc)
	case !sc.ExpiresAt.AsTime().Equal(e.clock.Now().Add(ttl)):
		t.Fatalf("expires %v, want the ttl from now", sc.ExpiresAt.AsTime())
	}

	// A firing past two thirds of the credential's life renews it before
	// it expires; daily firings with an hourly credential each find it
	// expired and renew it first; every run acts.
	for _, f := range []struct {
		run   string
		after time.Duration
	}{{"run-1", 0}, {"run-2", 45 * time.Minute}, {"run-3", 24 * time.Hour}, {"run-4", 24 * time.Hour}} {
		run := f.run
		e.clock.Advance(f.after)
		e.createRun(t, "sch-a", run, credContract([]string{"search"}, nil))
		cs := e.credentialed(run)
		pc, err := credential.VerifyChain(cs.Signed, cs.Chain, e.signer.PublicKey())
		switch {
		case err != nil:
			t.Fatalf("%s: %v", run, err)
		case len(cs.Chain) != 1 || pc.ParentCredentialId != sc.CredentialId || pc.ParentTaskId != "sch-a" || pc.Principal != "user:ana":
			t.Fatalf("%s credential %v, chain of %d", run, pc, len(cs.Chain))
		case !pc.ExpiresAt.AsTime().Equal(e.clock.Now().Add(ttl)):
			t.Fatalf("%s expires %v, want the renewed schedule credential's %v", run, pc.ExpiresAt.AsTime(), e.clock.Now().Add(ttl))
		}
		e.waitStatus(run, e.propose(t, run, "p1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	}
	// Renewing a run's credential renews the schedule's first, when due,
	// and extends the run's to it.
	operator := rpc.Identity{Principal: "user:op", Tenant: "acme", Roles: []string{access.Operator}, Verified: true}
	e.clock.Advance(45 * time.Minute)
	rc, err := e.plane.RenewCredential(ctx, operator, &stewardv1.RenewCredentialRequest{TaskId: "run-4", Reason: "a long run"})
	if err != nil || !rc.Credential.ExpiresAt.AsTime().Equal(e.clock.Now().Add(ttl)) {
		t.Fatalf("renewing run-4: %v, %v", rc, err)
	}
	s = e.waitSchedule(t, "sch-a", func(*stewardv1.Schedule) bool { return true })
	if s.Credential.Renewals != 4 || s.Credential.Credential.CredentialId != sc.CredentialId || !proto.Equal(rc.Chain[0], s.Credential.Signed) {
		t.Errorf("schedule credential after four runs and a run's renewal: %d renewals, id %s", s.Credential.Renewals, s.Credential.Credential.CredentialId)
	}
	// A run's log verifies offline, the schedule's credential in its chain.
	raws, err := e.Log.ReadRaw(ctx, "run-4")
	if err != nil {
		t.Fatal(err)
	}
	var events [][]byte
	for _, r := range raws {
		events = append(events, r.Data)
	}
	if rep := audit.Verify("run-4", events, audit.WithCredentials(e.signer.PublicKey())); !rep.OK() || len(rep.Credentials) != 2 {
		t.Errorf("run-4 offline: ok %v (%v), %d credentials checked", rep.OK(), rep.Break, len(rep.Credentials))
	}
	// A run whose contract widens the schedule's gets no credential.
	e.createRun(t, "sch-a", "run-wide", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	if a := e.waitStatus("run-wide", e.propose(t, "run-wide", "p1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED); !strings.Contains(denialOf(a), "widens") {
		t.Errorf("a widening run's action: %q", denialOf(a))
	}

	revoke := func(who rpc.Identity) (*stewardv1.CredentialState, error) {
		return e.plane.RevokeCredential(ctx, who, &stewardv1.RevokeCredentialRequest{ScheduleId: "sch-a", Reason: "the feed was retired"})
	}
	stranger := rpc.Identity{Principal: "user:eve", Tenant: "acme", Verified: true}
	if _, err := revoke(stranger); !errs.Is(err, errs.PermissionDenied) {
		t.Errorf("a stranger revoking: %v", err)
	}
	if _, err := revoke(rpc.Identity{Principal: "user:ana", Tenant: "globex", Roles: []string{access.Operator}, Verified: true}); !errs.Is(err, errs.NotFound) {
		t.Errorf("another tenant's operator revoking: %v", err)
	}
	if _, err := e.plane.RevokeCredential(ctx, stranger, &stewardv1.RevokeCredentialRequest{TaskId: "run-1", Reason: "r"}); !errs.Is(err, errs.PermissionDenied) {
		t.Errorf("a stranger revoking a task's credential: %v", err)
	}
	if _, err := e.plane.RevokeCredential(ctx, stranger, &stewardv1.RevokeCredentialRequest{TaskId: "run-1", ScheduleId: "sch-a", Reason: "r"}); !errs.Is(err, errs.Invalid) {
		t.Errorf("naming a task and a schedule: %v", err)
	}
	cs, err := revoke(rpc.Identity{Principal: "user:ana", Tenant: "acme", Verified: true})
	if err != nil || !cs.Revoked || cs.RevokedBy != "user:ana" {
		t.Fatalf("the creator revoking: %v, %v", cs, err)
	}
	if again, err := revoke(operator); err != nil || !proto.Equal(again, cs) {
		t.Errorf("revoking again: %v, %v; want it unchanged", again, err)
	}
	if s := e.waitSchedule(t, "sch-a", func(*stewardv1.Schedule) bool { return true }); s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED {
		t.Errorf("schedule after the revocation: %s", s.Status)
	}
	// The live run's next action is denied, naming the schedule.
	if a := e.waitStatus("run-4", e.propose(t, "run-4", "p2", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED); !strings.Contains(denialOf(a), "schedule sch-a") {
		t.Errorf("run-4's action after the revocation: %q", denialOf(a))
	}
	if _, err := e.plane.RenewCredential(ctx, operator, &stewardv1.RenewCredentialRequest{TaskId: "run-4", Reason: "r"}); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("renewing a run of a revoked schedule: %v", err)
	}
	// A run made after it (a firing racing the revocation) gets none.
	e.createRun(t, "sch-a", "run-late", credContract([]string{"search"}, nil))
	if a := e.waitStatus("run-late", e.propose(t, "run-late", "p1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED); !strings.Contains(denialOf(a), "credential") {
		t.Errorf("a late run's action: %q", denialOf(a))
	}
}
