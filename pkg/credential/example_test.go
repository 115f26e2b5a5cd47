package credential_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Issue a task's credential, delegate a narrower one to a sub-agent, and
// verify the chain offline with nothing but the public key. A delegation
// that would widen the parent is refused, naming the field.
func Example() {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	signer := credential.NewSigner(key)
	now := time.Now()

	parent := credential.Root(&stewardv1.TaskContract{
		TaskId:       "task-1",
		AllowedTools: []string{"search", "wire"},
		Scopes:       []string{"payments:write"},
	}, "user:ana", now, time.Hour)
	parentSigned, _ := signer.Sign(parent)

	sub := &stewardv1.TaskContract{TaskId: "task-2", AllowedTools: []string{"search"}}
	if err := credential.Narrows(parent, sub); err != nil {
		panic(err)
	}
	child := credential.Delegated(parent, sub, "agent:researcher", now)
	childSigned, _ := signer.Sign(child)

	// Offline: the root first, then the leaf.
	leaf, err := credential.VerifyChain(childSigned, []*stewardv1.SignedCredential{parentSigned}, signer.PublicKey())
	fmt.Println(leaf.Principal, leaf.AllowedTools, err)
	fmt.Println(credential.Covers(leaf, "wire", "1.0.0", nil, now))

	wider := &stewardv1.TaskContract{TaskId: "task-3", AllowedTools: []string{"search", "shell"}}
	fmt.Println(credential.Narrows(parent, wider) != nil)
	// Output:
	// agent:researcher [search] <nil>
	// credential cred-29ad3a2feb7ca7de6b1fbc1e does not cover tool wire (it allows [search])
	// true
}
