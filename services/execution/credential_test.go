package execution_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestNothingRunsUnderARevokedCredential: a permit issued before its
// task's credential was revoked is refused at claim, not dispatched.
func TestNothingRunsUnderARevokedCredential(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	b.register(ts, "charge", false, nil)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := &stewardv1.TaskContract{TaskId: "t-revoked", AllowedTools: []string{"charge"}}
	signed, err := credential.NewSigner(key).Sign(credential.Root(k, "agent", time.Now(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	taskID, actionID := b.permit("t-revoked", "charge", "card-1",
		&stewardv1.CredentialIssued{Credential: signed},
		&stewardv1.CredentialRevoked{CredentialId: credential.ID("t-revoked", ""), Reason: "leaked"},
	)
	a := b.WaitAction(taskID, actionID, status(failedS))
	if !strings.Contains(a.Outcome.GetReason(), "credential revoked: leaked (credential "+credential.ID("t-revoked", "")) {
		t.Errorf("outcome %q", a.Outcome.GetReason())
	}
	if n := ts.Calls(); n != 0 {
		t.Errorf("the tool was called %d times under a revoked credential", n)
	}
}

// TestNothingRunsUnderARevokedAncestor: a sub-task's permit is refused
// once the credential of the task it was delegated from is revoked, though
// its own credential still stands.
func TestNothingRunsUnderARevokedAncestor(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	b.register(ts, "charge", false, nil)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := credential.NewSigner(key)
	parent := &stewardv1.TaskContract{TaskId: "t-parent", AllowedTools: []string{"charge"}}
	root := credential.Root(parent, "agent", time.Now(), time.Hour)
	signedRoot, err := signer.Sign(root)
	if err != nil {
		t.Fatal(err)
	}
	b.Append("t-parent", &stewardv1.TaskCreated{Contract: parent}, &stewardv1.CredentialIssued{Credential: signedRoot},
		&stewardv1.CredentialRevoked{CredentialId: root.CredentialId, Reason: "compromised"})

	child := &stewardv1.TaskContract{TaskId: "t-child", AllowedTools: []string{"charge"}, ParentTaskId: "t-parent"}
	signedChild, err := signer.Sign(credential.Delegated(root, child, "sub-agent", time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	taskID, actionID := b.permitUnder(child, "charge", "card-1", &stewardv1.CredentialIssued{Credential: signedChild, Chain: []*stewardv1.SignedCredential{signedRoot}})
	a := b.WaitAction(taskID, actionID, status(failedS))
	if !strings.Contains(a.Outcome.GetReason(), "of ancestor task t-parent was revoked") {
		t.Errorf("outcome %q", a.Outcome.GetReason())
	}
	if n := ts.Calls(); n != 0 {
		t.Errorf("the tool was called %d times under a revoked ancestor", n)
	}
}
