package schedule_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
)

// TestFoldCredential: a schedule's credential is issued once, by
// governance, renewed only to a later expiry with nothing else changed,
// and revoked once; the revocation stops the schedule (REVOKED), which
// then records only a REVOKED firing or a run made before, and may still
// be deleted; the chain folded again, event by event, gives the same
// schedule.
func TestFoldCredential(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := credential.NewSigner(key)
	sign := func(c *stewardv1.TaskCredential) *stewardv1.SignedCredential {
		sc, err := signer.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	h := &history{t: t, at: t0}
	h.add("control", &stewardv1.ScheduleCreated{
		Spec:     &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}},
		Template: &stewardv1.ScheduleTemplate{Contract: &stewardv1.TaskContract{AllowedTools: []string{"search"}, Budget: &stewardv1.Budget{MaxTokens: 10}}},
	})
	s, _ := schedule.Fold(h.recs)
	first := schedule.Credential(s, t0, time.Hour)
	if first.TaskId != "sch-1" || first.Principal != "alice" || first.MaxTokens != 10 || !first.ExpiresAt.AsTime().Equal(t0.Add(time.Hour)) {
		t.Fatalf("credential = %v", first)
	}
	at := func(d time.Duration) bool {
		return schedule.RenewDue(&stewardv1.CredentialState{Credential: first}, t0.Add(d))
	}
	if at(39*time.Minute) || !at(40*time.Minute) {
		t.Error("a renewal is due at two thirds of the credential's life, not before")
	}
	// refused checks that p, appended now by plane, does not fold.
	refused := func(name, plane string, p event.Payload, code errs.Code) {
		t.Helper()
		probe := &history{t: t, at: h.at, recs: append([]*stewardv1.EventRecord(nil), h.recs...)}
		probe.add(plane, p)
		if _, err := schedule.Fold(probe.recs); !errs.Is(err, code) {
			t.Errorf("%s: %v, want %v", name, err, code)
		}
	}
	refused("an issue by the control plane", "control", &stewardv1.ScheduleCredentialIssued{Credential: sign(first)}, errs.Corrupt)
	refused("a renewal of nothing", "governance", &stewardv1.ScheduleCredentialIssued{Credential: sign(first), RenewalReason: "r"}, errs.FailedPrecondition)
	refused("a revocation of nothing", "governance", &stewardv1.ScheduleCredentialRevoked{CredentialId: first.CredentialId}, errs.FailedPrecondition)
	other := proto.CloneOf(first)
	other.TaskId = "sch-2"
	refused("another schedule's credential", "governance", &stewardv1.ScheduleCredentialIssued{Credential: sign(other)}, errs.FailedPrecondition)

	h.add("governance", &stewardv1.ScheduleCredentialIssued{Credential: sign(first)})
	refused("a second issue", "governance", &stewardv1.ScheduleCredentialIssued{Credential: sign(first)}, errs.FailedPrecondition)
	wider := credential.Renewed(first, t0.Add(50*time.Minute), t0.Add(2*time.Hour))
	wider.AllowedTools = []string{"search", "wire"}
	refused("a renewal that widens", "governance", &stewardv1.ScheduleCredentialIssued{Credential: sign(wider), RenewalReason: "r"}, errs.FailedPrecondition)
	h.add("governance", &stewardv1.ScheduleCredentialIssued{Credential: sign(credential.Renewed(first, t0.Add(50*time.Minute), t0.Add(2*time.Hour))), RenewalReason: "runs"})
	h.add("control", fired(t0.Add(time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, "run-a"))
	h.add("governance", &stewardv1.ScheduleCredentialRevoked{CredentialId: first.CredentialId, Reason: "leaked"})

	s, err = schedule.Fold(h.recs)
	switch {
	case err != nil:
		t.Fatal(err)
	case s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED || schedule.StatusName(s.Status) != "revoked" || !schedule.Next(s).IsZero():
		t.Fatalf("revoked schedule: %s, next %v", s.Status, schedule.Next(s))
	case !s.Credential.Revoked || s.Credential.RevokedReason != "leaked" || s.Credential.RevokedBy != "alice" || s.Credential.Renewals != 1:
		t.Fatalf("credential = %v", s.Credential)
	case !s.Credential.Credential.ExpiresAt.AsTime().Equal(t0.Add(2 * time.Hour)):
		t.Fatalf("renewed credential expires %v", s.Credential.Credential.ExpiresAt.AsTime())
	}
	refused("a second revocation", "governance", &stewardv1.ScheduleCredentialRevoked{CredentialId: first.CredentialId}, errs.FailedPrecondition)
	refused("a renewal of a revoked credential", "governance", &stewardv1.ScheduleCredentialIssued{Credential: sign(credential.Renewed(first, h.at, t0.Add(3*time.Hour))), RenewalReason: "r"}, errs.FailedPrecondition)
	refused("a skipped firing once revoked", "control", fired(t0.Add(2*time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_SKIPPED, ""), errs.FailedPrecondition)
	refused("a resumption once revoked", "control", &stewardv1.ScheduleResumed{}, errs.FailedPrecondition)
	h.add("control", fired(t0.Add(2*time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_REVOKED, ""))
	h.add("control", &stewardv1.ScheduleDeleted{})

	s, err = schedule.Fold(h.recs)
	if err != nil || s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_DELETED || s.RecentFirings[1].Disposition != stewardv1.FiringDisposition_FIRING_DISPOSITION_REVOKED {
		t.Fatalf("after the REVOKED firing and the deletion: %v, %v", s, err)
	}
	// Replayed one event at a time, the chain gives the same schedule.
	again := &stewardv1.Schedule{}
	for _, r := range h.recs {
		if err := schedule.Apply(again, r.Event, r.Sequence); err != nil {
			t.Fatal(err)
		}
	}
	if !proto.Equal(again, s) {
		t.Errorf("replayed:\n%v\nfolded:\n%v", again, s)
	}
}
