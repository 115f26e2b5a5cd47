// Package credential issues, narrows and verifies task credentials: the
// signed statement of what a task may touch (tools, scopes), spend, and
// until when. Governance signs every credential with one Ed25519 key; a
// delegated task's credential names its parent's and may only keep or
// narrow it, so the whole delegation chain can be checked offline with
// nothing but the public key.
//
// The functions here are pure and safe for concurrent use; a Signer is
// too.
package credential

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolpin"
)

// DefaultTTL is how long a credential lasts when the task has no deadline.
const DefaultTTL = 30 * 24 * time.Hour

// MinTTL and MaxTTL bound the credential lifetime an operator may set
// (--credential-ttl): shorter than a minute expires before an approval can
// be given; longer than a year is a credential nobody reviews.
const (
	MinTTL = time.Minute
	MaxTTL = 365 * 24 * time.Hour
)

// ID returns the id of the credential of taskID delegated from parent ("" for
// a task's own): derived, so that issuing it again is recognised.
func ID(taskID, parent string) string { return "cred-" + event.ID(taskID, "credential", parent)[:24] }

// Root returns the credential of a task that was not delegated: the
// contract's tools, scopes and budget, for its creator, until its deadline
// or ttl after now, whichever is sooner.
func Root(c *stewardv1.TaskContract, principal string, now time.Time, ttl time.Duration) *stewardv1.TaskCredential {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	expires := now.Add(ttl)
	if d := c.GetDeadline(); d != nil && d.AsTime().Before(expires) {
		expires = d.AsTime()
	}
	return &stewardv1.TaskCredential{
		CredentialId:  ID(c.GetTaskId(), ""),
		TaskId:        c.GetTaskId(),
		Principal:     principal,
		AllowedTools:  slices.Clone(c.GetAllowedTools()),
		Scopes:        slices.Clone(c.GetScopes()),
		MaxTokens:     c.GetBudget().GetMaxTokens(),
		MaxCostMicros: c.GetBudget().GetMaxCostMicros(),
		IssuedAt:      timestamppb.New(now),
		ExpiresAt:     timestamppb.New(expires),
		RiskTier:      c.GetRiskTier(),
	}
}

// Delegated returns the credential of a sub-task with contract c, for
// delegate, derived from parent; Narrows must accept c first. A budget or
// deadline c leaves unset is the parent's.
func Delegated(parent *stewardv1.TaskCredential, c *stewardv1.TaskContract, delegate string, now time.Time) *stewardv1.TaskCredential {
	d := &stewardv1.TaskCredential{
		CredentialId:       ID(c.GetTaskId(), parent.CredentialId),
		TaskId:             c.GetTaskId(),
		Principal:          delegate,
		AllowedTools:       slices.Clone(c.GetAllowedTools()),
		Scopes:             slices.Clone(c.GetScopes()),
		MaxTokens:          orParent(c.GetBudget().GetMaxTokens(), parent.MaxTokens),
		MaxCostMicros:      orParent(c.GetBudget().GetMaxCostMicros(), parent.MaxCostMicros),
		IssuedAt:           timestamppb.New(now),
		ExpiresAt:          parent.ExpiresAt,
		ParentCredentialId: parent.CredentialId,
		ParentTaskId:       parent.TaskId,
		RiskTier:           c.GetRiskTier(),
	}
	if dl := c.GetDeadline(); dl != nil {
		d.ExpiresAt = dl
	}
	return d
}

// Renewed returns c re-issued at now until expires, with nothing else
// changed: the same id, so permits, revocations and the delegation chain
// recorded in contracts keep naming it.
func Renewed(c *stewardv1.TaskCredential, now, expires time.Time) *stewardv1.TaskCredential {
	r := proto.CloneOf(c)
	r.IssuedAt, r.ExpiresAt = timestamppb.New(now), timestamppb.New(expires)
	return r
}

// RenewalOf checks that renewed is prev re-issued with a later expiry and
// nothing else changed but the key that signs it (which a key rotation
// changes): the check the fold makes on every renewal.
func RenewalOf(prev, renewed *stewardv1.TaskCredential) error {
	a, b := proto.CloneOf(prev), proto.CloneOf(renewed)
	a.IssuedAt, a.ExpiresAt, a.KeyId, b.IssuedAt, b.ExpiresAt, b.KeyId = nil, nil, "", nil, nil, ""
	switch {
	case !proto.Equal(a, b):
		return errs.New(errs.FailedPrecondition, "a renewal of credential %s may change only when it was issued, when it expires and the key that signs it", prev.CredentialId)
	case prev.ExpiresAt == nil || renewed.ExpiresAt == nil || !renewed.ExpiresAt.AsTime().After(prev.ExpiresAt.AsTime()):
		return errs.New(errs.FailedPrecondition, "a renewal of credential %s must expire later than it does (%s)", prev.CredentialId, prev.ExpiresAt.AsTime().Format(time.RFC3339))
	}
	return nil
}

// Narrows checks that a sub-task contract c keeps or narrows parent, and
// names the first field of c that would widen it.
func Narrows(parent *stewardv1.TaskCredential, c *stewardv1.TaskContract) error {
	for i, tool := range c.GetAllowedTools() {
		// A pinned parent tool allows the child that version only; a
		// child may pin a tool its parent leaves unpinned (toolpin.Within).
		if !toolpin.Within(parent.AllowedTools, tool) {
			return errs.Field(fmt.Sprintf("contract.allowed_tools[%d]", i), "%s is not among the parent credential's tools %v: a delegation may only keep or narrow them", errs.Quote(tool), parent.AllowedTools)
		}
	}
	for i, s := range c.GetScopes() {
		if !slices.Contains(parent.Scopes, s) {
			return errs.Field(fmt.Sprintf("contract.scopes[%d]", i), "%s is not among the parent credential's scopes %v: a delegation may only keep or narrow them", errs.Quote(s), parent.Scopes)
		}
	}
	if c.GetRiskTier() < parent.RiskTier {
		return errs.Field("contract.risk_tier", "%s is below the parent credential's %s: a delegation may not lower the risk tier, which decides what needs approval",
			c.GetRiskTier(), parent.RiskTier)
	}
	b := c.GetBudget()
	if err := capWithin("contract.budget.max_tokens", b.GetMaxTokens(), parent.MaxTokens); err != nil {
		return err
	}
	if err := capWithin("contract.budget.max_cost_micros", b.GetMaxCostMicros(), parent.MaxCostMicros); err != nil {
		return err
	}
	if dl := c.GetDeadline(); dl != nil && parent.ExpiresAt != nil && dl.AsTime().After(parent.ExpiresAt.AsTime()) {
		return errs.Field("contract.deadline", "%s is after the parent credential expires (%s): a delegation may not outlive it",
			dl.AsTime().Format(time.RFC3339), parent.ExpiresAt.AsTime().Format(time.RFC3339))
	}
	return nil
}

// narrowsCredential checks that child keeps or narrows parent in every
// bound: the check an offline verifier makes on each link of a chain.
func narrowsCredential(parent, child *stewardv1.TaskCredential) error {
	c := &stewardv1.TaskContract{
		AllowedTools: child.AllowedTools,
		Scopes:       child.Scopes,
		Budget:       &stewardv1.Budget{MaxTokens: child.MaxTokens, MaxCostMicros: child.MaxCostMicros},
		Deadline:     child.ExpiresAt,
		RiskTier:     child.RiskTier,
	}
	if err := Narrows(parent, c); err != nil {
		return err
	}
	switch {
	case parent.MaxTokens != 0 && child.MaxTokens == 0:
		return errs.Field("max_tokens", "is uncapped under a parent capped at %d", parent.MaxTokens)
	case parent.MaxCostMicros != 0 && child.MaxCostMicros == 0:
		return errs.Field("max_cost_micros", "is uncapped under a parent capped at %d", parent.MaxCostMicros)
	case child.ExpiresAt == nil && parent.ExpiresAt != nil:
		return errs.Field("expires_at", "never expires under a parent that does")
	}
	return nil
}

// capWithin checks a child's cap against its parent's; zero in the child
// inherits, zero in the parent is no cap.
func capWithin(field string, child, parent int64) error {
	switch {
	case child < 0:
		return errs.Field(field, "must not be negative")
	case parent != 0 && child > parent:
		return errs.Field(field, "%d is above the parent credential's cap %d: a delegation may only keep or narrow it", child, parent)
	}
	return nil
}

func orParent(v, parent int64) int64 {
	if v == 0 {
		return parent
	}
	return v
}

// Covers reports why c does not allow a call of version of tool, which
// requires scopes, at now: it has expired, the tool is not among its tools
// (or is pinned to another version), or a scope is missing. Revocation is
// the caller's to check: it is recorded on the log, not in the credential.
func Covers(c *stewardv1.TaskCredential, tool, version string, scopes []string, now time.Time) error {
	switch {
	case c == nil:
		return errs.New(errs.FailedPrecondition, "the task has no credential")
	case c.ExpiresAt != nil && !now.Before(c.ExpiresAt.AsTime()):
		return errs.New(errs.FailedPrecondition, "credential %s expired at %s", c.CredentialId, c.ExpiresAt.AsTime().Format(time.RFC3339))
	case !toolpin.Allows(c.AllowedTools, tool, version):
		if pin, found := toolpin.Find(c.AllowedTools, tool); found {
			return errs.New(errs.PermissionDenied, "credential %s covers tool %s at version %s only, not %s", c.CredentialId, tool, errs.Quote(pin), errs.Quote(version))
		}
		return errs.New(errs.PermissionDenied, "credential %s does not cover tool %s (it allows %v)", c.CredentialId, tool, c.AllowedTools)
	}
	for _, s := range scopes {
		if !slices.Contains(c.Scopes, s) {
			return errs.New(errs.PermissionDenied, "credential %s does not hold scope %s, which tool %s requires", c.CredentialId, errs.Quote(s), tool)
		}
	}
	return nil
}
