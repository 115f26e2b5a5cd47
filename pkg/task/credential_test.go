package task_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
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
	if got, want := tk.Contract.CredentialRef, credential.ID("t1", ""); got != want || k.CredentialRef != "" {
		t.Errorf("contract.credential_ref = %q (created with %q), want %q: the contract names its current credential", got, k.CredentialRef, want)
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

// TestCredentialRenewalFold: a renewal keeps the credential and extends
// its expiry; it may change nothing else, never shortens it, and renews
// neither a missing nor a revoked credential nor an ended task's.
func TestCredentialRenewalFold(t *testing.T) {
	k := &stewardv1.TaskContract{Intent: "i", TaskId: "t1", AllowedTools: []string{"search"}}
	now := time.Now()
	root := credential.Root(k, "agent", now, time.Hour)
	own := issued(t, root)
	renewal := func(c *stewardv1.TaskCredential) *stewardv1.CredentialIssued {
		r := issued(t, c)
		r.RenewalReason = "longer"
		return r
	}
	later := renewal(credential.Renewed(root, now.Add(time.Minute), now.Add(2*time.Hour)))
	tk, err := foldAs(t, k, as{"steward", own}, as{"user:op", later})
	if err != nil || tk.Credential.Renewals != 1 || !tk.Credential.Credential.ExpiresAt.AsTime().Equal(now.Add(2*time.Hour)) {
		t.Fatalf("renewed: %v %v", tk.GetCredential(), err)
	}
	wider := credential.Renewed(root, now, now.Add(2*time.Hour))
	wider.AllowedTools = append(wider.AllowedTools, "wire")
	revoke := &stewardv1.CredentialRevoked{CredentialId: root.CredentialId, Reason: "leaked"}
	for name, steps := range map[string][]as{
		"nothing to renew": {{"user:op", later}},
		"sooner":           {{"steward", own}, {"user:op", renewal(credential.Renewed(root, now, now.Add(time.Minute)))}},
		"wider":            {{"steward", own}, {"user:op", renewal(wider)}},
		"revoked":          {{"steward", own}, {"user:op", revoke}, {"user:op", later}},
		"ended":            {{"steward", own}, {"user:op", &stewardv1.TaskCancelled{}}, {"user:op", later}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := foldAs(t, k, steps...); !errs.Is(err, errs.FailedPrecondition) {
				t.Fatalf("err = %v, want failed_precondition", err)
			}
		})
	}
}

// TestRevokedTaskHandsInNoWork: after its own credential is revoked the
// fold takes no artifact and no produced result for a task.
func TestRevokedTaskHandsInNoWork(t *testing.T) {
	k := &stewardv1.TaskContract{Intent: "i", TaskId: "t1"}
	own := issued(t, credential.Root(k, "agent", time.Now(), time.Hour))
	revoked := as{"user:op", &stewardv1.CredentialRevoked{CredentialId: credential.ID("t1", ""), Reason: "leaked"}}
	for name, last := range map[string]as{
		"an artifact": {"agent", submitted("report", 1, "")},
		"a result":    {"agent", &stewardv1.TaskProduced{Round: 1}},
	} {
		if _, err := foldAs(t, k, as{"steward", own}, revoked, last); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "leaked") {
			t.Errorf("%s after the revocation: %v", name, err)
		}
	}
}
