package audit

import (
	"crypto/ed25519"
	"fmt"
	"strings"

	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// Option configures a Replayer.
type Option func(*Replayer)

// WithCredentials makes the replayer verify every credential a task was
// issued, offline: the signature of the credential and of each ancestor's
// in its delegation chain, that each link names the one before and keeps
// or narrows it (credential.VerifyChain), and that the credential is the
// one the task's contract was delegated under. With trusted keys every
// link must be signed by one of them; without, each is checked against
// the key it carries, which proves the chain is intact but not who signed
// it: the report names the key ids so they can be compared.
func WithCredentials(trusted ...ed25519.PublicKey) Option {
	return func(r *Replayer) {
		r.credentials = true
		r.trusted = trusted
	}
}

// CredentialCheck is one credential verified during a replay.
type CredentialCheck struct {
	// Index is the position of the CredentialIssued event.
	Index        int
	CredentialID string
	TaskID       string
	Principal    string
	// Links is the chain's length, the credential itself included: 1 for
	// a task's own credential.
	Links int
	// KeyIDs are the keys the links were signed with, root first.
	KeyIDs []string
	// Pinned is set when every link was signed by a trusted key.
	Pinned bool
}

// checkCredential verifies a CredentialIssued event against the task it
// is for.
func (r *Replayer) checkCredential(index int, ev *stewardv1.Event) (*CredentialCheck, error) {
	ci := ev.GetCredentialIssued()
	leaf, err := credential.VerifyChain(ci.Credential, ci.Chain, r.trusted...)
	if err != nil {
		return nil, fmt.Errorf("credential of task %s does not verify: %v (chain: %s)", ev.TaskId, err, describeChain(ci))
	}
	c := r.task.Contract
	hops := c.GetDelegationChain()
	// A schedule's run is delegated from its schedule's credential, for
	// the schedule's creator, who created the run (docs/schedules.md).
	run := c.GetParentTaskId() == "" && r.task.GetScheduleRun().GetScheduleId() != ""
	parent := c.GetParentTaskId()
	if run {
		parent = r.task.ScheduleRun.ScheduleId
	}
	switch {
	case leaf.TaskId != ev.TaskId:
		return nil, fmt.Errorf("credential %s is for task %s, not %s", leaf.CredentialId, leaf.TaskId, ev.TaskId)
	case leaf.ParentTaskId != parent:
		return nil, fmt.Errorf("credential %s of task %s names parent task %q; the contract names %q", leaf.CredentialId, ev.TaskId, leaf.ParentTaskId, parent)
	case run && leaf.Principal != r.task.CreatedBy:
		return nil, fmt.Errorf("credential %s of run %s of schedule %s is for %s, not the run's creator %s", leaf.CredentialId, ev.TaskId, parent, leaf.Principal, r.task.CreatedBy)
	case !run && leaf.ParentTaskId != "" && (len(hops) == 0 || hops[len(hops)-1].CredentialRef != leaf.ParentCredentialId || hops[len(hops)-1].ToRef != leaf.Principal):
		return nil, fmt.Errorf("credential %s of task %s (for %s, from %s) is not the delegation its contract records", leaf.CredentialId, ev.TaskId, leaf.Principal, leaf.ParentCredentialId)
	}
	check := &CredentialCheck{Index: index, CredentialID: leaf.CredentialId, TaskID: leaf.TaskId, Principal: leaf.Principal, Links: len(ci.Chain) + 1, Pinned: len(r.trusted) > 0}
	for _, s := range append(append([]*stewardv1.SignedCredential(nil), ci.Chain...), ci.Credential) {
		check.KeyIDs = append(check.KeyIDs, credential.KeyID(s.PublicKey))
	}
	return check, nil
}

// describeChain names each link's task and credential, root first, so a
// failure's "link N" can be traced; the links are read unverified.
func describeChain(ci *stewardv1.CredentialIssued) string {
	var parts []string
	for i, s := range append(append([]*stewardv1.SignedCredential(nil), ci.Chain...), ci.Credential) {
		c, err := task.DecodeCredential(s)
		if err != nil {
			parts = append(parts, fmt.Sprintf("link %d unreadable", i))
			continue
		}
		parts = append(parts, fmt.Sprintf("link %d = %s of task %s", i, c.CredentialId, c.TaskId))
	}
	return strings.Join(parts, ", ")
}
