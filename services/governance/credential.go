package governance

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

// Task credentials: governance signs one for every task when it is
// created, checks it before policy and again before every permit, and
// revokes it on an operator's word.
//
// What a check refuses:
//   - a task with no credential, or whose credential is revoked;
//   - a task whose ancestor's credential is revoked (a revocation cascades
//     down the delegation chain: it is found by walking parent_task_id
//     when the child acts, not by writing to every child);
//   - an expired credential, or one that does not cover the action's tool
//     and the scopes its tool contract requires.
//
// Compensations are checked for revocation but not for expiry or
// coverage. Undoing must stay possible after the deadline that often ended
// the task, and a compensation is never the agent's choice: Steward
// proposes it, with the compensating tool the undone action's contract
// names, for an action the credential covered when it ran. Revocation
// still stops it: it is the operator's emergency stop, and a person takes
// over what is left to undo.

// issueOnCreate reacts to a new task by issuing its credential. A
// credential that cannot be issued (its parent's does not verify, or the
// contract widens it) is logged, not retried: nothing a redelivery brings
// would change that, and every action of the task is then denied saying
// why. It is idempotent: the event id derives from the task, and the fold
// takes one credential per task.
func (cr *credentials) issueOnCreate(ctx context.Context, rec *stewardv1.EventRecord) error {
	if cr.signer == nil {
		return nil
	}
	_, why, err := cr.issue(ctx, rec.Event.TaskId, rec.Event, 0)
	if why != "" {
		cr.logger.Error("no credential issued", "task", rec.Event.TaskId, "reason", why)
	}
	return err
}

// issue records taskID's credential if it has none yet, and returns the
// task after. A delegated task's parent is issued first if it has none.
// why says why no credential could be issued; err is a failure worth
// retrying.
func (cr *credentials) issue(ctx context.Context, taskID string, cause *stewardv1.Event, depth int) (t *stewardv1.Task, why string, err error) {
	return cr.issueAs(ctx, taskID, event.ID(taskID, event.TypeCredentialIssued), cause, depth)
}

// issueAs is issue recording taskID's credential under event id: a
// renewal with a request id that issues the credential records it under
// the request's id, so that a repeat finds it (see RenewCredential). The
// fold takes one credential per task, whichever id comes first.
func (cr *credentials) issueAs(ctx context.Context, taskID, id string, cause *stewardv1.Event, depth int) (t *stewardv1.Task, why string, err error) {
	t, _, err = cr.tasks.Load(ctx, taskID)
	if err != nil {
		if errs.Is(err, errs.NotFound) || errs.Is(err, errs.Corrupt) {
			return nil, err.Error(), nil
		}
		return nil, "", err
	}
	if t.Credential != nil || cr.signer == nil {
		return t, "", nil
	}
	now := cr.now()
	var (
		cred  *stewardv1.TaskCredential
		chain []*stewardv1.SignedCredential
	)
	switch parentID := t.Contract.GetParentTaskId(); {
	case parentID == "" && t.GetScheduleRun().GetScheduleId() != "":
		ps, why, err := cr.runParent(ctx, t, cause)
		if why != "" || err != nil {
			return t, why, err
		}
		if cred, chain, why = cr.delegate(t, ps, "schedule "+t.ScheduleRun.ScheduleId, t.CreatedBy, now); why != "" {
			return t, why, nil
		}
	case parentID == "":
		cred = credential.Root(t.Contract, t.CreatedBy, now, cr.ttl)
	default:
		if depth >= taskstore.MaxChainWalk {
			return t, fmt.Sprintf("the delegation chain of task %s is deeper than %d", taskID, taskstore.MaxChainWalk), nil
		}
		parent, why, err := cr.issue(ctx, parentID, cause, depth+1)
		if why != "" || err != nil {
			if why != "" {
				why = fmt.Sprintf("parent task %s: %s", parentID, why)
			}
			return t, why, err
		}
		if parent.Credential == nil {
			return t, fmt.Sprintf("parent task %s has no credential", parentID), nil
		}
		links := t.Contract.GetDelegationChain()
		if len(links) == 0 || links[len(links)-1].GetToRef() == "" {
			return t, fmt.Sprintf("task %s names parent %s but no delegate in its delegation_chain", taskID, parentID), nil
		}
		if cred, chain, why = cr.delegate(t, parent.Credential, "parent task "+parentID, links[len(links)-1].ToRef, now); why != "" {
			return t, why, nil
		}
	}
	signed, err := cr.signer.Sign(cred)
	if err != nil {
		return nil, "", err
	}
	t, err = cr.tasks.Update(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if t.Credential != nil {
			return nil, nil
		}
		return event.New(cr.meta(taskID, id, cause), &stewardv1.CredentialIssued{Credential: signed, Chain: chain})
	})
	if err != nil {
		return nil, "", err
	}
	cr.logger.Debug("credential issued", "task", taskID, "credential", cred.CredentialId, "expires", cred.ExpiresAt.AsTime())
	return t, "", nil
}

// delegate returns the credential of t for delegate, delegated from ps,
// the credential of parent (a task or a schedule), and the chain to
// record with it; why says why it may not be.
func (cr *credentials) delegate(t *stewardv1.Task, ps *stewardv1.CredentialState, parent, delegate string, now time.Time) (*stewardv1.TaskCredential, []*stewardv1.SignedCredential, string) {
	// The parent's credential came from the log; check it was ours and
	// holds together before deriving from it.
	pc, err := credential.VerifyChain(ps.Signed, ps.Chain, cr.trustedKeys()...)
	if err != nil {
		return nil, nil, fmt.Sprintf("the credential of %s does not verify: %v", parent, err)
	}
	if err := credential.Narrows(pc, t.Contract); err != nil {
		return nil, nil, fmt.Sprintf("the contract widens credential %s of %s: %v", pc.CredentialId, parent, err)
	}
	return credential.Delegated(pc, t.Contract, delegate, now), append(slices.Clone(ps.Chain), ps.Signed), ""
}

// ensureCredential returns t with its credential, issuing it now if the
// action came before it (missingCredential). why says why there is none.
func (cr *credentials) ensureCredential(ctx context.Context, t *stewardv1.Task, cause *stewardv1.Event) (*stewardv1.Task, string, error) {
	if cr.signer == nil || !missingCredential(t) {
		return t, "", nil
	}
	issued, why, err := cr.issue(ctx, t.Contract.GetTaskId(), cause, 0)
	if err != nil || why != "" {
		return t, why, err
	}
	return issued, "", nil
}

// credentialRefusal says why action a of t may not be permitted under t's
// credential now, or "" when it may (see the top of this file). err is a
// failure to find out, worth retrying.
func (cr *credentials) credentialRefusal(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action) (string, error) {
	c, err := cr.readCredentialCheck(ctx, t, a)
	if err != nil {
		return "", err
	}
	return cr.refuseCredential(t, a, c), nil
}

// credentialCheck is what checking an action's credential reads from
// outside its task: read before a conditional write, so that the check
// inside it (refuseCredential) reads nothing.
type credentialCheck struct {
	// above is a revoked credential up the delegation chain, or nil.
	above *taskstore.Revocation
	// scopes are those the action's tool requires; unknown says why the
	// tool could not be found instead.
	scopes  []string
	unknown error
}

// readCredentialCheck reads what refuseCredential needs about action a of
// t. err is a failure to read, worth retrying.
func (cr *credentials) readCredentialCheck(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action) (credentialCheck, error) {
	var c credentialCheck
	if cr.signer == nil {
		return c, nil
	}
	// Read even for a task with no credential yet: it may have one by the
	// time of the write.
	var err error
	if c.above, err = cr.tasks.RevokedAbove(ctx, t); err != nil {
		return c, err
	}
	if a.GetCompensates() != "" {
		return c, nil
	}
	entry, err := cr.tools.Lookup(ctx, cr.log, t.Tenant, a.Tool, a.ToolVersion)
	switch {
	case errs.Is(err, errs.NotFound):
		c.unknown = err
	case err != nil:
		return c, err
	default:
		c.scopes = entry.Tool.Contract.GetRequiredScopes()
	}
	return c, nil
}

// refuseCredential is credentialRefusal on what readCredentialCheck read:
// it checks t's credential as t has it now, by the plane's clock.
func (cr *credentials) refuseCredential(t *stewardv1.Task, a *stewardv1.Action, c credentialCheck) string {
	if cr.signer == nil {
		return ""
	}
	if t.Credential == nil {
		return fmt.Sprintf("task %s has no credential", t.Contract.GetTaskId())
	}
	if why := cr.verifyCredential(t.Credential); why != "" {
		return why
	}
	if why := taskstore.RevocationReason(t, c.above); why != "" {
		return why
	}
	if a.GetCompensates() != "" {
		return ""
	}
	if c.unknown != nil {
		return fmt.Sprintf("credential %s cannot be checked: %v", t.Credential.Credential.GetCredentialId(), c.unknown)
	}
	if err := credential.Covers(t.Credential.GetCredential(), a.Tool, a.ToolVersion, c.scopes, cr.now()); err != nil {
		return err.Error()
	}
	return ""
}

// verifyCredential says why cs was not issued by this governance: the fold
// takes a credential as the log has it, and only its signatures, along the
// whole chain and by a trusted key, show that governance issued it.
func (cr *credentials) verifyCredential(cs *stewardv1.CredentialState) string {
	key := verifiedKey(cs)
	if cr.verified.has(key) {
		return ""
	}
	if _, err := credential.VerifyChain(cs.Signed, cs.Chain, cr.trustedKeys()...); err != nil {
		return fmt.Sprintf("credential %s does not verify: %v", cs.Credential.GetCredentialId(), err)
	}
	cr.verified.add(key)
	return ""
}

// verifiedKey names exactly what was verified: every link's bytes,
// signature and key. A signature alone would let anyone who can write to
// the log pair a signature seen before with bytes of their own.
func verifiedKey(cs *stewardv1.CredentialState) string {
	h := sha256.New()
	for _, s := range append(slices.Clone(cs.Chain), cs.Signed) {
		for _, b := range [][]byte{s.GetCredential(), s.GetSignature(), s.GetPublicKey()} {
			_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
			h.Write(b)
		}
	}
	return string(h.Sum(nil))
}

// trustedKeys are the keys a credential may be signed with.
func (cr *credentials) trustedKeys() []ed25519.PublicKey {
	return append([]ed25519.PublicKey{cr.signer.PublicKey()}, cr.trusted...)
}

// verifiedSet is a bounded set of verified credentials: verifying costs an
// Ed25519 check per link, and every action of a task checks the same
// credential twice. Past its bound it starts over, which only costs
// checks.
type verifiedSet struct {
	mu  sync.Mutex
	set map[string]struct{}
}

const maxVerified = 100_000

func (v *verifiedSet) has(key string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.set[key]
	return ok
}

func (v *verifiedSet) add(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.set == nil || len(v.set) >= maxVerified {
		v.set = map[string]struct{}{}
	}
	v.set[key] = struct{}{}
}

// MaxRevokeReasonLen bounds the reason for a revocation or a renewal.
const MaxRevokeReasonLen = 1024

// closeApprovals reacts to a revocation: every action still awaiting
// approval under the revoked credential, or under one delegated from it,
// is denied, so that nobody approves what could not be permitted. An
// approval given meanwhile meets the same check before its permit. It is
// idempotent: a denial's id derives from its action, and an action no
// longer awaiting approval is left alone.
func (cr *credentials) closeApprovals(ctx context.Context, rec *stewardv1.EventRecord) error {
	if cr.signer == nil {
		return nil
	}
	if err := cr.approvals.Sync(ctx, cr.log); err != nil {
		return err
	}
	for _, ap := range cr.approvals.List("", true) {
		t, _, err := cr.tasks.Load(ctx, ap.TaskId)
		if errs.Is(err, errs.Corrupt) {
			// One broken history must not keep the others' approvals
			// open; its permits are refused all the same.
			cr.logger.Error("revocation: cannot check the approvals of a broken task", "task", ap.TaskId, "err", err)
			continue
		}
		if err != nil {
			return err
		}
		a := task.FindAction(t, ap.ActionId)
		if a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
			continue
		}
		why, err := cr.tasks.Revoked(ctx, t)
		if errs.Is(err, errs.Corrupt) {
			why, err = "the task's credential cannot be checked: "+err.Error(), nil
		}
		if err != nil {
			return err
		}
		if why == "" {
			continue
		}
		if err := cr.deny(ctx, ap.TaskId, a, []string{why}, rec.Event); err != nil {
			return err
		}
	}
	return nil
}

// CredentialKey returns the public key credentials are signed with and its
// id.
func (cr *credentials) CredentialKey() (*stewardv1.GetCredentialKeyResponse, error) {
	if cr.signer == nil {
		return nil, errs.New(errs.FailedPrecondition, "this governance plane issues no credentials")
	}
	return &stewardv1.GetCredentialKeyResponse{PublicKey: cr.signer.PublicKey(), KeyId: cr.signer.KeyID()}, nil
}
