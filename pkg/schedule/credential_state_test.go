package schedule_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
)

// TestFoldRefusesCredentialEventsOutOfState: the fold refuses what its
// writers never record, so a replay refuses it too: a REVOKED firing of
// a schedule whose credential stands, and a renewal of the credential of
// a schedule that is not active (governance renews only an active one's,
// conditionally on the chain's head).
func TestFoldRefusesCredentialEventsOutOfState(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := credential.NewSigner(key)
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	h := &history{t: t, at: t0}
	h.add("control", &stewardv1.ScheduleCreated{
		Spec:     &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}},
		Template: &stewardv1.ScheduleTemplate{Contract: &stewardv1.TaskContract{AllowedTools: []string{"search"}}},
	})
	s, _ := schedule.Fold(h.recs)
	first := schedule.Credential(s, t0, time.Hour)
	signed, err := signer.Sign(first)
	if err != nil {
		t.Fatal(err)
	}
	h.add("governance", &stewardv1.ScheduleCredentialIssued{Credential: signed})
	refused := func(name string, hist *history, plane string, p event.Payload) {
		t.Helper()
		probe := &history{t: t, at: hist.at, recs: append([]*stewardv1.EventRecord(nil), hist.recs...)}
		probe.add(plane, p)
		if _, err := schedule.Fold(probe.recs); !errs.Is(err, errs.FailedPrecondition) {
			t.Errorf("%s: %v, want failed_precondition", name, err)
		}
	}
	refused("a REVOKED firing of an active schedule", h, "control", fired(t0.Add(time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_REVOKED, ""))
	renewal, err := signer.Sign(credential.Renewed(first, t0.Add(50*time.Minute), t0.Add(2*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	h.add("control", &stewardv1.SchedulePaused{})
	refused("a renewal of a paused schedule's credential", h, "governance", &stewardv1.ScheduleCredentialIssued{Credential: renewal, RenewalReason: "r"})
	h.add("control", &stewardv1.ScheduleDeleted{})
	refused("a renewal of a deleted schedule's credential", h, "governance", &stewardv1.ScheduleCredentialIssued{Credential: renewal, RenewalReason: "r"})
}
