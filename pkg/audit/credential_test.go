package audit_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// delegated seals the history of task "child", delegated to agent:sub
// from task "root": its creation, its start and its credential, issued by
// signer with the root's credential in the chain. change may alter the
// child's credential before it is signed.
func delegated(t *testing.T, signer *credential.Signer, change func(*stewardv1.TaskCredential)) [][]byte {
	t.Helper()
	now := time.Now()
	root := credential.Root(&stewardv1.TaskContract{TaskId: "root", AllowedTools: []string{"search", "wire"}}, "user:ana", now, time.Hour)
	rootSigned, err := signer.Sign(root)
	if err != nil {
		t.Fatal(err)
	}
	contract := &stewardv1.TaskContract{
		TaskId: "child", AllowedTools: []string{"search"}, ParentTaskId: "root",
		DelegationChain: []*stewardv1.Delegation{{FromRef: "user:ana", ToRef: "agent:sub", CredentialRef: root.CredentialId, DelegatedAt: timestamppb.New(now)}},
	}
	leaf := credential.Delegated(root, contract, "agent:sub", now)
	if change != nil {
		change(leaf)
	}
	leafSigned, err := signer.Sign(leaf)
	if err != nil {
		t.Fatal(err)
	}
	return sealed(t, "child",
		&stewardv1.TaskCreated{Contract: contract},
		&stewardv1.TaskStarted{},
		&stewardv1.CredentialIssued{Credential: leafSigned, Chain: []*stewardv1.SignedCredential{rootSigned}},
	)
}

func newSigner(t *testing.T) *credential.Signer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return credential.NewSigner(key)
}

func TestVerifyChecksCredentials(t *testing.T) {
	signer := newSigner(t)
	events := delegated(t, signer, nil)

	rep := audit.Verify("child", events, audit.WithCredentials(signer.PublicKey()))
	if !rep.OK() || len(rep.Credentials) != 1 {
		t.Fatalf("report %+v", rep)
	}
	c := rep.Credentials[0]
	if c.Index != 2 || c.TaskID != "child" || c.Principal != "agent:sub" || c.Links != 2 || !c.Pinned ||
		len(c.KeyIDs) != 2 || c.KeyIDs[0] != signer.KeyID() || c.KeyIDs[1] != signer.KeyID() {
		t.Errorf("check %+v", c)
	}
	// Without a trusted key: intact, not pinned, the key named.
	if rep := audit.Verify("child", events, audit.WithCredentials()); !rep.OK() || rep.Credentials[0].Pinned || rep.Credentials[0].KeyIDs[0] != signer.KeyID() {
		t.Errorf("unpinned report %+v", rep)
	}
	// Without the option credentials are not looked at.
	if rep := audit.Verify("child", events); !rep.OK() || len(rep.Credentials) != 0 {
		t.Errorf("plain report %+v", rep)
	}
}

func TestVerifyNamesTheBadCredentialLink(t *testing.T) {
	signer, other := newSigner(t), newSigner(t)
	for _, tc := range []struct {
		name    string
		events  [][]byte
		trusted ed25519.PublicKey
		want    []string
	}{
		{"untrusted signer", delegated(t, signer, nil), other.PublicKey(), []string{"task child", "link 0", "not trusted", "link 0 = cred-", "of task root"}},
		{"widening link", delegated(t, signer, func(c *stewardv1.TaskCredential) { c.AllowedTools = append(c.AllowedTools, "shell") }), signer.PublicKey(), []string{"task child", "link 1", "widens", `"shell"`}},
		{"not the recorded delegate", delegated(t, signer, func(c *stewardv1.TaskCredential) { c.Principal = "agent:mallory" }), signer.PublicKey(), []string{"agent:mallory", "not the delegation its contract records"}},
		{"tampered credential", tamperCredential(t, delegated(t, signer, nil)), signer.PublicKey(), []string{"task child", "link 1", "does not verify"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := audit.Verify("child", tc.events, audit.WithCredentials(tc.trusted))
			if rep.OK() || rep.Break.Index != 2 {
				t.Fatalf("break %+v, want one at the credential (event 2)", rep.Break)
			}
			for _, w := range tc.want {
				if !strings.Contains(rep.Break.Reason, w) {
					t.Errorf("reason %q lacks %q", rep.Break.Reason, w)
				}
			}
		})
	}
}

// tamperCredential re-seals the history with one byte of the child's
// signed credential flipped: the hash chain holds, the signature does not.
func tamperCredential(t *testing.T, events [][]byte) [][]byte {
	t.Helper()
	var out [][]byte
	var prev []byte
	for _, data := range events {
		ev, err := event.Open(data)
		if err != nil {
			t.Fatal(err)
		}
		ev = proto.CloneOf(ev)
		if ci := ev.GetCredentialIssued(); ci != nil {
			ci.Credential.Credential[len(ci.Credential.Credential)-1] ^= 1
		}
		ev.Hash, ev.PrevHash = nil, nil
		sealed, err := event.Seal(ev, prev)
		if err != nil {
			t.Fatal(err)
		}
		prev = ev.Hash
		out = append(out, sealed)
	}
	return out
}
