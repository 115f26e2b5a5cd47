package execution_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestAPermitWhoseSignatureDoesNotHoldIsNotExecuted: with governance's key,
// the plane runs a signed permit, and refuses — logs, leaves permitted,
// never calls the tool — a permit appended to the log without a
// signature, with a signature by another key, or a genuinely signed
// permit copied onto another action.
func TestAPermitWhoseSignatureDoesNotHoldIsNotExecuted(t *testing.T) {
	ts := startTool(t)
	b := newHarness(t, breaker.Config{})
	b.register(ts, "charge", false, nil)
	b.plane.Stop()
	governance, forger := newKey(t), newKey(t)
	b.cfg.PermitKeys = []ed25519.PublicKey{governance.PublicKey()}
	refused := b.recordRefusals(t)
	b.start()

	// open records a running task with one allowed action, and returns it
	// with the permit governance would issue.
	open := func(taskID string) (*stewardv1.Action, *stewardv1.ActionPermit) {
		b.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"charge"}}}, &stewardv1.TaskStarted{})
		a, pm := b.allow(taskID, "p1", "charge", "card-"+taskID)
		return a, pm.Permit
	}
	sign := func(s *credential.Signer, pm *stewardv1.ActionPermit) *stewardv1.SignedPermit {
		sp, err := s.SignPermit(pm)
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}

	// A genuine permit runs.
	good, goodPermit := open("t-signed")
	goodSigned := sign(governance, goodPermit)
	b.Append("t-signed", &stewardv1.ActionPermitted{Permit: goodPermit, Signed: goodSigned})
	b.WaitAction("t-signed", good.ActionId, status(succeededS))

	replayed, replayedPermit := open("t-replayed")
	for _, tc := range []struct {
		taskID string
		a      *stewardv1.Action
		ev     *stewardv1.ActionPermitted
		want   string
	}{
		{"t-unsigned", nil, nil, "is not signed"},
		{"t-other-key", nil, nil, "not trusted"},
		// The permit names t-replayed's action as the fold requires; its
		// signature is t-signed's.
		{"t-replayed", replayed, &stewardv1.ActionPermitted{Permit: replayedPermit, Signed: goodSigned}, "was signed for action " + good.ActionId},
	} {
		a := tc.a
		if a == nil {
			var pm *stewardv1.ActionPermit
			a, pm = open(tc.taskID)
			tc.ev = &stewardv1.ActionPermitted{Permit: pm}
			if tc.taskID == "t-other-key" {
				tc.ev.Signed = sign(forger, pm)
			}
		}
		b.Append(tc.taskID, tc.ev)
		refused(tc.want)
		b.Settle(execution.PlaneName)
		got := b.WaitAction(tc.taskID, a.ActionId, func(*stewardv1.Action) bool { return true })
		if got.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED || got.ClaimedBy != "" {
			t.Errorf("%s: the forged permit left the action %v, claimed by %q; want it permitted, unclaimed", tc.taskID, got.Status, got.ClaimedBy)
		}
		if n := b.Count(tc.taskID, event.TypeActionClaimed) + b.Count(tc.taskID, event.TypeActionDispatched); n != 0 {
			t.Errorf("%s: %d claims or dispatches under a forged permit", tc.taskID, n)
		}
	}
	if n := ts.Calls(); n != 1 {
		t.Errorf("the tool was called %d times; want once, for the signed permit", n)
	}
}

// recordRefusals has the plane, from its next start, log through a
// recorder as well, and returns a wait for a "permit refused" line saying
// want.
func (b *harness) recordRefusals(t *testing.T) func(want string) {
	var (
		mu   sync.Mutex
		seen []string
	)
	b.logger = slog.New(levels{Handler: stewardtest.Logger(t).Handler(), mu: &mu, seen: &seen})
	return func(want string) {
		t.Helper()
		stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, "permit refused") && strings.Contains(s, want) }), strings.Join(seen, "\n")
		})
	}
}

func newKey(t *testing.T) *credential.Signer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return credential.NewSigner(key)
}
