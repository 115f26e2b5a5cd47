package control_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/services/control"
)

// TestRetryAcrossASecretKeyRotation: an action proposed under the old
// secret key fails after the control plane restarted with a new key and
// the old one as earlier (docs/keys.md). Its retry proposes the same
// request — the old commitment and sealed value kept, since a commitment
// under the new key would change request_hash — while a new proposal of
// the same value commits under the new key.
func TestRetryAcrossASecretKeyRotation(t *testing.T) {
	r := newHarness(t)
	id := r.secretTask(t, "rotated")
	a := r.propose(t, id, "p1", "login", "acct", map[string]any{"user": "bob", "password": "pw-hunter2"})

	ring := r.rotateSecretKey(t)

	r.run(t, id, a.ActionId, failed(transient, "HTTP 503: busy"), nil, time.Now())
	r.settle()
	next := retryOf(r.task(t, id), a.ActionId)
	if next == nil {
		t.Fatal("the failed action was not retried across the rotation")
	}
	if next.RequestHash != a.RequestHash || len(next.SealedSecrets) != 1 || next.SealedSecrets[0].Commitment != a.SealedSecrets[0].Commitment {
		t.Fatalf("the retry is %s with %v; want the request and commitment of %s", next.RequestHash, next.SealedSecrets, a.RequestHash)
	}
	if v, err := ring.Open(id, next.SealedSecrets[0].Commitment, next.SealedSecrets[0].Sealed); err != nil || string(v) != `"pw-hunter2"` {
		t.Errorf("the retry's sealed value opens to %s, %v", v, err)
	}
	fresh := r.propose(t, id, "p2", "login", "acct", map[string]any{"user": "bob", "password": "pw-hunter2"})
	if fresh.RequestHash == a.RequestHash {
		t.Error("a new proposal after the rotation commits under the old key")
	}
}

// TestRepeatedProposalAcrossASecretKeyRotation: an agent that repeats a
// proposal (the same proposal_id and params: its first answer was lost)
// after the secret key was rotated gets the action the first try
// recorded, not AlreadyExists: the repeat keeps the commitment the action
// holds under the earlier key. Other params under that proposal_id are
// still refused.
func TestRepeatedProposalAcrossASecretKeyRotation(t *testing.T) {
	r := newHarness(t)
	id := r.secretTask(t, "repeated")
	params := map[string]any{"user": "bob", "password": "pw-hunter2"}
	a := r.propose(t, id, "p1", "login", "acct", params)

	r.rotateSecretKey(t)

	if again := r.propose(t, id, "p1", "login", "acct", params); again.ActionId != a.ActionId || again.RequestHash != a.RequestHash {
		t.Errorf("the repeat is %s (%s); want the first try's %s (%s)", again.ActionId, again.RequestHash, a.ActionId, a.RequestHash)
	}
	ps, _ := structpb.NewStruct(map[string]any{"user": "bob", "password": "pw-another"})
	if _, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{
		TaskId: id, ProposalId: "p1", Tool: "login", Target: "acct", Params: ps}); !errs.Is(err, errs.AlreadyExists) {
		t.Errorf("a repeat with another secret: %v; want AlreadyExists", err)
	}
}

// rotateSecretKey restarts the control plane with a new secret key and the
// one it had as the earlier key of its ring, and returns the ring.
func (r *harness) rotateSecretKey(t *testing.T) *secret.Sealer {
	t.Helper()
	r.ctl.Stop()
	ring, err := secret.New(bytes.Repeat([]byte{9}, secret.KeySize), r.sealerKey)
	if err != nil {
		t.Fatal(err)
	}
	r.sealer = ring
	r.ctl = control.New(r.Log, r.Logger, r.config())
	r.start(t)
	return ring
}
