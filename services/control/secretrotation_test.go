package control_test

import (
	"bytes"
	"testing"
	"time"

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

	r.ctl.Stop()
	ring, err := secret.New(bytes.Repeat([]byte{9}, secret.KeySize), r.sealerKey)
	if err != nil {
		t.Fatal(err)
	}
	r.sealer = ring
	r.ctl = control.New(r.Log, r.Logger, r.config())
	r.start(t)

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
