package task

import (
	"google.golang.org/protobuf/proto"

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
		if t.Credential != nil {
			return nil, true, errs.New(errs.FailedPrecondition, "task %s already has credential %s", t.Contract.GetTaskId(), t.Credential.Credential.GetCredentialId())
		}
		c, err := DecodeCredential(p.CredentialIssued.Credential)
		if err != nil {
			return nil, true, err
		}
		if c.TaskId != t.Contract.GetTaskId() {
			return nil, true, errs.New(errs.FailedPrecondition, "credential %s is for task %s, not %s", c.CredentialId, c.TaskId, t.Contract.GetTaskId())
		}
		return func() {
			t.Credential = &stewardv1.CredentialState{
				Credential: c,
				Signed:     p.CredentialIssued.Credential,
				Chain:      p.CredentialIssued.Chain,
			}
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
