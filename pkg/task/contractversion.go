package task

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// A task's contract has versions (docs/revisions.md): version 1 is the
// contract it was created with, and each approved revision the next. A
// version is named by its number and its hash together. Until a revision
// takes effect the task, its actions and its plan steps record none (0
// reads as 1): a history written before revisions existed folds as it
// did (pkg/audit's corpus).

// MaxContractRevisions bounds the revisions proposed to one task's
// contract, whatever became of them: each stays on the task with its whole
// contract, and its proposer may withdraw it, so a loop of proposals would
// grow the task without end.
const MaxContractRevisions = 64

// ContractVersion is the version of t's contract in force.
func ContractVersion(t *stewardv1.Task) uint32 { return VersionOf(t.GetContractVersion()) }

// VersionOf reads a recorded contract version: 0, recorded while version
// 1 was in force, is 1.
func VersionOf(v uint32) uint32 { return max(v, 1) }

// ContractHash is the hex SHA-256 of c's canonical JSON, what a revision
// and every approval of it bind to. protojson's output is deliberately
// unstable, so it is decoded and encoded again: keys sorted at every
// depth, no whitespace, no HTML escaping, numbers as protojson wrote them
// (integers; 64-bit ones as strings) — the form of pkg/action's canonical
// JSON, without importing it (the auditor's fold needs no bus).
// credential_ref is left out: the fold moves it as credentials are
// issued, and it is not a term of the contract.
func ContractHash(c *stewardv1.TaskContract) (string, error) {
	c = proto.CloneOf(c)
	if c == nil {
		c = &stewardv1.TaskContract{}
	}
	c.CredentialRef = ""
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("contract hash: %w", err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("contract hash: %w", err)
	}
	h := sha256.New()
	h.Write([]byte("steward.contract.v1\x00"))
	enc := json.NewEncoder(h)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return "", fmt.Errorf("contract hash: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Revised is base with the revisable fields of rev: intent,
// desired_outcome, acceptance_criteria, milestones and budget.milestones. Every other
// field is base's. It is what a revision's contract must equal, and what
// an approved revision makes of the contract in force.
func Revised(base, rev *stewardv1.TaskContract) *stewardv1.TaskContract {
	c := proto.CloneOf(base)
	c.Intent, c.DesiredOutcome = rev.GetIntent(), rev.GetDesiredOutcome()
	c.AcceptanceCriteria = cloneAll(rev.GetAcceptanceCriteria())
	if ms := rev.GetBudget().GetMilestones(); len(ms) > 0 || c.Budget != nil {
		if c.Budget == nil {
			c.Budget = &stewardv1.Budget{}
		}
		c.Budget.Milestones = cloneAll(ms)
	}
	c.Milestones = cloneAll(rev.GetMilestones())
	return c
}

// Changed names the revisable fields in which rev differs from base, in
// field order.
func Changed(base, rev *stewardv1.TaskContract) []string {
	var out []string
	if base.GetIntent() != rev.GetIntent() {
		out = append(out, "intent")
	}
	if base.GetDesiredOutcome() != rev.GetDesiredOutcome() {
		out = append(out, "desired_outcome")
	}
	if !equalAll(base.GetAcceptanceCriteria(), rev.GetAcceptanceCriteria()) {
		out = append(out, "acceptance_criteria")
	}
	if !equalAll(base.GetMilestones(), rev.GetMilestones()) {
		out = append(out, "milestones")
	}
	if !equalAll(base.GetBudget().GetMilestones(), rev.GetBudget().GetMilestones()) {
		out = append(out, "budget.milestones")
	}
	return out
}

func equalAll[M proto.Message](a, b []M) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// firstContractVersion is version 1 of t's contract, as it stood before
// the first revision took effect: what the task was created with, and
// what has moved since by other means (a deadline extended, a budget
// raised).
func firstContractVersion(t *stewardv1.Task) *stewardv1.ContractVersion {
	hash, _ := ContractHash(t.Contract) // a contract always encodes
	return &stewardv1.ContractVersion{
		Version: 1, ContractHash: hash, Reason: "created", ProposedBy: t.CreatedBy,
		ProposedAt: t.CreatedAt, EffectiveAt: t.CreatedAt,
	}
}

// OpenRevision is t's open contract revision, or nil.
func OpenRevision(t *stewardv1.Task) *stewardv1.ContractRevision {
	if n := len(t.ContractRevisions); n > 0 && t.ContractRevisions[n-1].State == stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_OPEN {
		return t.ContractRevisions[n-1]
	}
	return nil
}

// FindRevision is t's contract revision id, or nil.
func FindRevision(t *stewardv1.Task, id string) *stewardv1.ContractRevision {
	for _, r := range t.ContractRevisions {
		if r.RevisionId == id {
			return r
		}
	}
	return nil
}

// RevisionNeedsRole reports whether r's policy snapshot asks a holder of
// one of its roles to approve it too.
func RevisionNeedsRole(r *stewardv1.ContractRevision) bool {
	return r.GetSnapshot().GetDecision() == stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
}
