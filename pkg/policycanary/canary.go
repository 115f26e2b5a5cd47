// Package policycanary re-evaluates recorded policy snapshots under a
// candidate bundle and reports each decision that would change: the
// tightenings and the loosenings apart, grouped by tool and reason
// (docs/policy-canary.md). It is pure — the snapshots come from
// AuditService.ListPolicySnapshots, the evaluation from the caller's
// Evaluator — and touches no task. A Canary is not safe for concurrent
// use; its Report is read once every snapshot was added.
package policycanary

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/auditbundle"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/task"
)

// Direction is which way a decision moved.
type Direction string

const (
	// Tightened: the candidate asks more before the call runs (allow →
	// require_approval → deny, more approvers, fewer roles that may
	// approve).
	Tightened Direction = "tightened"
	// Loosened: the reverse, or a role that may now approve which could
	// not before.
	Loosened Direction = "loosened"
)

// Why a snapshot is not re-evaluated: never guessed at.
const (
	NotKept          = "its input was not kept (recorded before inputs were)"
	NotHeld          = "its input is not in the policy store"
	RevisionSnapshot = "a contract revision's evaluation: its input is not kept"
	HeldPlan         = "a plan governance held after its approval: not policy's decision"
)

// Outcome is one side of a change: what policy decided, and whom it asks.
type Outcome struct {
	Decision  string   `json:"decision"`
	Approvals uint32   `json:"approvals,omitempty"`
	Roles     []string `json:"roles,omitempty"`
	Reasons   []string `json:"reasons,omitempty"`
}

// Change is one snapshot whose decision would change.
type Change struct {
	TaskID      string    `json:"taskId"`
	SnapshotID  string    `json:"snapshotId"`
	Sequence    uint64    `json:"sequence"`
	ActionID    string    `json:"actionId,omitempty"`
	PlanVersion uint32    `json:"planVersion,omitempty"`
	Tool        string    `json:"tool"`
	Direction   Direction `json:"direction"`
	Before      Outcome   `json:"before"`
	After       Outcome   `json:"after"`
}

// Transition is the change in words: "allow → deny", "require_approval
// (1 of authorizer) → require_approval (2 of authorizer)".
func (c Change) Transition() string { return c.Before.String() + " → " + c.After.String() }

func (o Outcome) String() string {
	if o.Decision != "require_approval" {
		return o.Decision
	}
	return fmt.Sprintf("require_approval (%d of %s)", max(1, o.Approvals), strings.Join(o.Roles, ", "))
}

// Reason is what a change is grouped under: the stricter side's reasons,
// which say what the candidate now asks for, or what it no longer does.
func (c Change) Reason() string {
	if c.Direction == Tightened {
		return strings.Join(c.After.Reasons, "; ")
	}
	return strings.Join(c.Before.Reasons, "; ")
}

// Canary re-evaluates snapshots one by one under its candidate.
type Canary struct {
	eval   auditbundle.Evaluator
	inputs map[string][]byte // by hash, the current task's: a stream sends each input once a task
	task   string            // the task of the last snapshot added
	report Report
}

// New is a canary of the candidate eval evaluates, whose revision is
// revision.
func New(eval auditbundle.Evaluator, revision string) *Canary {
	return &Canary{eval: eval, inputs: map[string][]byte{}, report: Report{Candidate: revision, NotReevaluable: map[string]int{}}}
}

// Add re-evaluates one recorded snapshot. An evaluation that fails is
// an error of the report, not of Add: the canary goes on and says so.
func (c *Canary) Add(ctx context.Context, rec *stewardv1.RecordedSnapshot) {
	s := rec.GetSnapshot()
	c.report.Snapshots++
	if rec.TaskId != c.task { // a stream sends each input once a task: the last task's are not needed again
		c.task = rec.TaskId
		clear(c.inputs)
	}
	if len(rec.Input) > 0 {
		// Checked here, not trusted from the server: the report is only
		// as true as the inputs it re-evaluates, and one that is not the
		// input judged is an error a pipeline must not pass over.
		if policystore.InputHash(rec.Input) != s.GetInputHash() {
			c.report.Errors = append(c.report.Errors, fmt.Sprintf("task %s snapshot %s: the input sent does not hash to its input_hash", rec.TaskId, s.GetSnapshotId()))
			return
		}
		c.inputs[s.GetInputHash()] = rec.Input
	}
	input, why := c.inputOf(rec)
	if why != "" {
		c.report.NotReevaluable[why]++
		return
	}
	plan := rec.Kind == stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_PLAN
	got, err := c.eval(ctx, input, s.GetEvaluatedAt().AsTime(), plan)
	if err != nil {
		c.report.Errors = append(c.report.Errors, fmt.Sprintf("task %s snapshot %s: %v", rec.TaskId, s.GetSnapshotId(), err))
		return
	}
	c.report.Reevaluated++
	before, after := recorded(s), asRecorded(got, s, !plan && asksAlways(input))
	dir, changed := compare(before, after)
	if !changed {
		return
	}
	tool := rec.Tool
	if plan {
		tool = "(plan)"
	}
	c.report.Changes = append(c.report.Changes, Change{TaskID: rec.TaskId, SnapshotID: s.GetSnapshotId(), Sequence: rec.Sequence,
		ActionID: rec.ActionId, PlanVersion: rec.PlanVersion, Tool: tool, Direction: dir, Before: before, After: after})
}

// inputOf is rec's recorded input, or why it cannot be re-evaluated.
func (c *Canary) inputOf(rec *stewardv1.RecordedSnapshot) ([]byte, string) {
	s := rec.GetSnapshot()
	switch {
	case rec.Kind == stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_CONTRACT_REVISION:
		return nil, RevisionSnapshot
	case !s.GetInputKept():
		return nil, NotKept
	case rec.Kind == stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_PLAN && heldPlan(s):
		return nil, HeldPlan
	}
	input, ok := c.inputs[s.GetInputHash()]
	if !ok {
		return nil, NotHeld
	}
	return input, ""
}

// heldPlan reports whether s is governance's deny of a plan whose
// approval the policy in force no longer supported (task.PlanChangedReason).
func heldPlan(s *stewardv1.PolicySnapshot) bool {
	prefix, _, _ := strings.Cut(task.PlanChangedReason("\x00"), "\x00")
	return s.Decision == stewardv1.PolicyDecision_POLICY_DECISION_DENY && len(s.Reasons) > 0 && strings.HasPrefix(s.Reasons[0], prefix)
}

// Report is what a canary found.
func (c *Canary) Report() *Report {
	r := c.report
	r.Groups = groups(r.Changes)
	return &r
}

// Words of a decision as policy spells them, by the snapshot's enum.
var words = map[stewardv1.PolicyDecision]string{
	stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:            "allow",
	stewardv1.PolicyDecision_POLICY_DECISION_DENY:             "deny",
	stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL: "require_approval",
}

func recorded(s *stewardv1.PolicySnapshot) Outcome {
	return outcome(words[s.Decision], s.RequiredApprovals, s.RequiredApproverRoles, s.Reasons)
}

func outcome(decision string, approvals uint32, roles, reasons []string) Outcome {
	o := Outcome{Decision: decision, Reasons: reasons}
	if decision == "require_approval" {
		o.Approvals, o.Roles = max(1, approvals), slices.Sorted(slices.Values(roles))
		if len(o.Roles) == 0 {
			o.Roles = []string{task.DefaultApproverRole}
		}
	}
	return o
}

// asksAlways reports whether input, an action's, is of a tool whose
// contract asks a person for every call: governance (services/governance:
// askAlways) then turns policy's allow into require_approval, whatever
// the bundle says — the candidate's allow too, though the recorded
// snapshot, decided require_approval or deny by policy, shows no sign of
// it.
func asksAlways(input []byte) bool {
	var in struct {
		Tool struct {
			DefaultApproval string `json:"default_approval"`
		} `json:"tool"`
	}
	return json.Unmarshal(input, &in) == nil && in.Tool.DefaultApproval == "APPROVAL_RULE_ALWAYS"
}

// asRecorded is the candidate's decision got as governance would have
// recorded it for s: with the holds governance puts on top of policy
// (sameDecision in pkg/auditbundle reads them the same way). A tool that
// asks a person for every call (always) still does; a call held back by
// a context item is still held, whatever policy says.
func asRecorded(got auditbundle.Decision, s *stewardv1.PolicySnapshot, always bool) Outcome {
	if s.Decision == stewardv1.PolicyDecision_POLICY_DECISION_DENY && len(s.Reasons) > 0 &&
		!slices.ContainsFunc(s.Reasons, func(r string) bool { return !strings.HasPrefix(r, "context item ") }) {
		return recorded(s)
	}
	reasons := got.Reasons
	decision := got.Decision
	if always && decision == "allow" {
		decision, reasons = "require_approval", append(slices.Clone(reasons), "the tool asks a person for every call (default_approval APPROVAL_RULE_ALWAYS)")
	}
	return outcome(decision, got.RequiredApprovals, got.RequiredApproverRoles, reasons)
}

// rank orders decisions from the least asked to the most.
var rank = map[string]int{"allow": 0, "require_approval": 1, "deny": 2}

// compare says which way the decision moved, if at all. Any one of
// an approval's roles may approve, so a role added lets more people
// approve: a loosening, even beside a role removed.
func compare(before, after Outcome) (Direction, bool) {
	switch rb, ra := rank[before.Decision], rank[after.Decision]; {
	case ra > rb:
		return Tightened, true
	case ra < rb:
		return Loosened, true
	case before.Decision != "require_approval":
		return "", false
	case after.Approvals > before.Approvals:
		return Tightened, true
	case after.Approvals < before.Approvals:
		return Loosened, true
	}
	added := slices.ContainsFunc(after.Roles, func(r string) bool { return !slices.Contains(before.Roles, r) })
	removed := slices.ContainsFunc(before.Roles, func(r string) bool { return !slices.Contains(after.Roles, r) })
	switch {
	case added:
		return Loosened, true
	case removed:
		return Tightened, true
	}
	return "", false
}
