package governance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestRenewal: a credential that ran out is renewed with a later expiry
// and nothing else changed, and the task acts again; a sub-task's
// credential is renewed only as far as its parent's; a renewal is
// refused without a reason or the operator role, when it would not
// extend the credential, and for a revoked one; a log with renewals
// verifies offline.
func TestRenewal(t *testing.T) {
	e := newHarness(t)
	const ttl = time.Hour
	e.start(t, credentialTTL(ttl))
	ctx := context.Background()
	operator := rpc.Identity{Principal: "user:op", Roles: []string{access.Operator}, Verified: true}
	renew := func(who rpc.Identity, taskID, reason string) (*stewardv1.CredentialState, error) {
		return e.plane.RenewCredential(ctx, who, &stewardv1.RenewCredentialRequest{TaskId: taskID, Reason: reason})
	}

	e.create(t, "long", "user:ana", credContract([]string{"search"}, nil))
	first := e.credentialed("long")
	e.delegate(t, "long", "sub", "agent:sub", credContract([]string{"search"}, nil))
	e.credentialed("sub")

	for _, tc := range []struct {
		who    rpc.Identity
		taskID string
		reason string
		code   errs.Code
		says   string
	}{
		{operator, "long", "", errs.Invalid, "reason"},
		{operator, "", "r", errs.Invalid, "task_id"},
		// Who may (the operator role) is the role table's, enforced at the
		// RPC edge: e2e TestRoleTableEnforced.
		{operator, "nope", "r", errs.NotFound, "nope"},
		// The sub-task's credential ends with its parent's.
		{operator, "sub", "r", errs.FailedPrecondition, "renew it first"},
	} {
		if _, err := renew(tc.who, tc.taskID, tc.reason); !errs.Is(err, tc.code) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("renew %q by %s with reason %q: %v, want %v naming %q", tc.taskID, tc.who.Principal, tc.reason, err, tc.code, tc.says)
		}
	}

	// Past its expiry the task is denied; renewed, it acts again.
	e.clock.Pass(first.Credential.ExpiresAt.AsTime())
	a := e.waitStatus("long", e.propose(t, "long", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if !strings.Contains(denialOf(a), "expired") {
		t.Fatalf("denial %q", denialOf(a))
	}
	cs, err := renew(operator, "long", "the migration runs another month")
	if err != nil {
		t.Fatal(err)
	}
	if cs.Renewals != 1 || !cs.Credential.ExpiresAt.AsTime().After(e.clock.Now()) {
		t.Errorf("renewed: %d renewals, expires %v", cs.Renewals, cs.Credential.ExpiresAt.AsTime())
	}
	if !sameButTimes(first.Credential, cs.Credential) {
		t.Errorf("the renewal changed more than its times:\n%v\n%v", first.Credential, cs.Credential)
	}
	e.waitStatus("long", e.propose(t, "long", "s2", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)

	// Now the sub-task can be renewed, to its parent's new expiry.
	sub, err := renew(operator, "sub", "with its parent")
	if err != nil {
		t.Fatal(err)
	}
	if !sub.Credential.ExpiresAt.AsTime().Equal(cs.Credential.ExpiresAt.AsTime()) || !proto.Equal(sub.Chain[len(sub.Chain)-1], cs.Signed) {
		t.Errorf("the sub-task's renewal: expires %v, chain %v; want its parent's renewed credential", sub.Credential.ExpiresAt.AsTime(), sub.Chain)
	}
	e.waitStatus("sub", e.propose(t, "sub", "s1", "search"), stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)

	// A deadline bounds a renewal.
	k := credContract([]string{"search"}, nil)
	k.Deadline = timestamppb.New(e.clock.Now().Add(ttl / 2))
	e.create(t, "soon", "user:ana", k)
	e.credentialed("soon")
	if _, err := renew(operator, "soon", "r"); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("renewing up to the deadline: %v", err)
	}
	// Once the deadline has passed, a renewal would leave the credential
	// expired: refused, not reported as done.
	e.clock.Pass(k.Deadline.AsTime())
	if _, err := renew(operator, "soon", "r"); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "has passed") {
		t.Errorf("renewing after the deadline: %v", err)
	}

	// A revoked credential is not renewed, nor one under it.
	if _, err := e.plane.RevokeCredential(ctx, operator, &stewardv1.RevokeCredentialRequest{TaskId: "long", Reason: "halt"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"long", "sub"} {
		if _, err := renew(operator, id, "r"); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "revoked") {
			t.Errorf("renewing %s after the revocation: %v", id, err)
		}
	}

	// The log, renewals and all, verifies offline with the key.
	for _, id := range []string{"long", "sub"} {
		raws, err := e.Log.ReadRaw(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var events [][]byte
		for _, r := range raws {
			events = append(events, r.Data)
		}
		rep := audit.Verify(id, events, audit.WithCredentials(e.signer.PublicKey()))
		if !rep.OK() || len(rep.Credentials) != 2 || rep.Task.Credential.GetRenewals() != 1 {
			t.Errorf("%s offline: ok %v (%v), %d credentials checked, %d renewals", id, rep.OK(), rep.Break, len(rep.Credentials), rep.Task.Credential.GetRenewals())
		}
	}
}

// sameButTimes reports whether a and b differ at most in when they were
// issued and when they expire (the key is the same here).
func sameButTimes(a, b *stewardv1.TaskCredential) bool {
	a, b = proto.CloneOf(a), proto.CloneOf(b)
	a.IssuedAt, a.ExpiresAt, b.IssuedAt, b.ExpiresAt = nil, nil, nil, nil
	return proto.Equal(a, b)
}
