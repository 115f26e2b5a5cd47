package task_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

func issued(t *testing.T, c *stewardv1.TaskCredential) *stewardv1.CredentialIssued {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := credential.NewSigner(key).Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return &stewardv1.CredentialIssued{Credential: s}
}

func TestCredentialFold(t *testing.T) {
	k := &stewardv1.TaskContract{Intent: "i", TaskId: "t1", Budget: &stewardv1.Budget{MaxCostMicros: 100}}
	own := issued(t, credential.Root(k, "agent", time.Now(), time.Hour))
	tk, err := foldAs(t, k, as{"steward", own}, as{"user:op", &stewardv1.CredentialRevoked{CredentialId: credential.ID("t1", ""), Reason: "leaked"}})
	if err != nil || tk.Credential.GetCredential().GetPrincipal() != "agent" || !tk.Credential.Revoked || tk.Credential.RevokedBy != "user:op" {
		t.Fatalf("%v %v", tk.GetCredential(), err)
	}
	sub := &stewardv1.TaskContract{Intent: "i", TaskId: "t1", ParentTaskId: "t0", Budget: &stewardv1.Budget{MaxCostMicros: 100}}
	for name, tc := range map[string]struct {
		steps []as
		code  errs.Code
	}{
		"issued twice":          {[]as{{"steward", own}, {"steward", own}}, errs.FailedPrecondition},
		"for another task":      {[]as{{"steward", issued(t, &stewardv1.TaskCredential{CredentialId: "c", TaskId: "t2"})}}, errs.FailedPrecondition},
		"revoked before issued": {[]as{{"user:op", &stewardv1.CredentialRevoked{CredentialId: "c"}}}, errs.FailedPrecondition},
		"another credential revoked": {[]as{{"steward", own}, {"user:op", &stewardv1.CredentialRevoked{CredentialId: "c"}}},
			errs.FailedPrecondition},
		"revoked twice": {[]as{{"steward", own}, {"user:op", &stewardv1.CredentialRevoked{CredentialId: credential.ID("t1", "")}},
			{"user:op", &stewardv1.CredentialRevoked{CredentialId: credential.ID("t1", "")}}}, errs.FailedPrecondition},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := foldAs(t, k, tc.steps...); !errs.Is(err, tc.code) {
				t.Fatalf("err = %v, want %v", err, tc.code)
			}
		})
	}
	// A delegated task's budget was reserved from its parent's: it is not
	// raised, credential or not.
	if _, err := foldAs(t, sub, as{"user:bo", &stewardv1.BudgetRaised{MaxCostMicros: 101}}); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("a delegated budget raised: %v", err)
	}
	if _, err := foldAs(t, k, as{"steward", own}, as{"user:bo", &stewardv1.BudgetRaised{MaxCostMicros: 500}}); err != nil {
		t.Fatalf("a task's own budget owner may raise it past the credential's record of it: %v", err)
	}
}
