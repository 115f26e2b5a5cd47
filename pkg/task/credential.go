package task

import (
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// credentialStep checks a credential event against t and returns the
// change to make; ok is false for other events. The fold keeps what the
// credential says; its signature is checked by whoever relies on it
// (governance before a permit, an auditor offline), since the fold has no
// keys.
func credentialStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_CredentialIssued:
		ci := p.CredentialIssued
		c, err := DecodeCredential(ci.Credential)
		if err != nil {
			return nil, true, err
		}
		if c.TaskId != t.Contract.GetTaskId() {
			return nil, true, errs.New(errs.FailedPrecondition, "credential %s is for task %s, not %s", c.CredentialId, c.TaskId, t.Contract.GetTaskId())
		}
		if err := renews(t, ci, c); err != nil {
			return nil, true, err
		}
		return func() {
			t.Credential = &stewardv1.CredentialState{
				Credential: c,
				Signed:     ci.Credential,
				Chain:      ci.Chain,
				Renewals:   t.Credential.GetRenewals(),
			}
			if ci.RenewalReason != "" {
				t.Credential.Renewals++
			}
			// The contract names its current credential (DESIGN: "current
			// credential_ref"). Copied, not changed in place: a contract
			// may be shared with a copy of the task handed out before.
			t.Contract = proto.CloneOf(t.Contract)
			t.Contract.CredentialRef = c.CredentialId
		}, true, nil
	case *stewardv1.Event_CredentialRevoked:
		r := p.CredentialRevoked
		switch cur := t.Credential; {
		case cur == nil:
			return nil, true, errs.New(errs.FailedPrecondition, "task %s has no credential to revoke", t.Contract.GetTaskId())
		case cur.Credential.GetCredentialId() != r.CredentialId:
			return nil, true, errs.New(errs.FailedPrecondition, "task %s's credential is %s, not %s", t.Contract.GetTaskId(), cur.Credential.GetCredentialId(), r.CredentialId)
		case cur.Revoked:
			return nil, true, errs.New(errs.FailedPrecondition, "credential %s is already revoked", r.CredentialId)
		}
		return func() {
			c := proto.CloneOf(t.Credential)
			c.Revoked, c.RevokedReason, c.RevokedBy, c.RevokedAt = true, r.Reason, ev.Actor.GetPrincipal(), ev.Time
			t.Credential = c
		}, true, nil
	}
	return nil, false, nil
}

// renews checks a credential event against the credential t holds: the
// first is an issue, every later one a renewal of the same credential
// with a later expiry, never of a revoked one.
func renews(t *stewardv1.Task, ci *stewardv1.CredentialIssued, c *stewardv1.TaskCredential) error {
	cur := t.Credential
	switch {
	case cur == nil && ci.RenewalReason != "":
		return errs.New(errs.FailedPrecondition, "task %s has no credential to renew", t.Contract.GetTaskId())
	case cur == nil:
		return nil
	case ci.RenewalReason == "":
		return errs.New(errs.FailedPrecondition, "task %s already has credential %s", t.Contract.GetTaskId(), cur.Credential.GetCredentialId())
	case cur.Revoked:
		return errs.New(errs.FailedPrecondition, "credential %s is revoked and is not renewed", cur.Credential.GetCredentialId())
	case Terminal(t.Status):
		return errs.New(errs.FailedPrecondition, "task %s has ended; its credential is not renewed", t.Contract.GetTaskId())
	}
	return credential.RenewalOf(cur.Credential, c)
}

// DecodeCredential returns the credential inside s, unverified.
func DecodeCredential(s *stewardv1.SignedCredential) (*stewardv1.TaskCredential, error) {
	if s == nil || len(s.Credential) == 0 {
		return nil, errs.New(errs.Invalid, "credential is empty")
	}
	c := &stewardv1.TaskCredential{}
	if err := proto.Unmarshal(s.Credential, c); err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "decode credential")
	}
	return c, nil
}
