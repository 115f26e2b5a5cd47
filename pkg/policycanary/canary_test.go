package policycanary_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/auditbundle"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policycanary"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/task"
)

// echo is a candidate whose decision on an input is the input itself, a
// JSON auditbundle.Decision: each case says what the candidate decides.
func echo(_ context.Context, input []byte, _ time.Time, _ bool) (auditbundle.Decision, error) {
	var d auditbundle.Decision
	if err := json.Unmarshal(input, &d); err != nil || d.Decision == "" {
		return d, errors.New("rego runtime error")
	}
	return d, nil
}

var (
	allow    = stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
	deny     = stewardv1.PolicyDecision_POLICY_DECISION_DENY
	approval = stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
)

// recorded is snapshot n of an action of tool, decided as s says, on an
// input under which the candidate decides got.
func recorded(n int, tool string, s *stewardv1.PolicySnapshot, got auditbundle.Decision) *stewardv1.RecordedSnapshot {
	input, _ := json.Marshal(got)
	s.SnapshotId, s.InputHash, s.InputKept = fmt.Sprintf("snap-%d", n), policystore.InputHash(input), true
	return &stewardv1.RecordedSnapshot{TaskId: "t", ActionId: fmt.Sprintf("a-%d", n), Tool: tool, Kind: stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_ACTION,
		Snapshot: s, Input: input}
}

// withTool adds to input a tool whose contract asks a person for every
// call, as governance's input spells it.
func withTool(t *testing.T, input []byte) []byte {
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil {
		t.Fatal(err)
	}
	in["tool"] = map[string]any{"name": "pay", "default_approval": "APPROVAL_RULE_ALWAYS"}
	out, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompare: each way a decision moves, and the moves that are none.
func TestCompare(t *testing.T) {
	asks := func(n uint32, roles ...string) *stewardv1.PolicySnapshot {
		return &stewardv1.PolicySnapshot{Decision: approval, RequiredApprovals: n, RequiredApproverRoles: roles}
	}
	always := "tool pay@1 asks a person for every call (default_approval APPROVAL_RULE_ALWAYS)"
	for _, c := range []struct {
		name string
		was  *stewardv1.PolicySnapshot
		got  auditbundle.Decision
		want policycanary.Direction // "" for unchanged
	}{
		{"allow → deny", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{Decision: "deny"}, policycanary.Tightened},
		{"allow → approval", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{Decision: "require_approval"}, policycanary.Tightened},
		{"deny → allow", &stewardv1.PolicySnapshot{Decision: deny}, auditbundle.Decision{Decision: "allow"}, policycanary.Loosened},
		{"approval → allow", asks(1), auditbundle.Decision{Decision: "allow"}, policycanary.Loosened},
		{"one → two approvers", asks(0, "authorizer"), auditbundle.Decision{Decision: "require_approval", RequiredApprovals: 2, RequiredApproverRoles: []string{"authorizer"}}, policycanary.Tightened},
		{"two → one approver", asks(2, "authorizer"), auditbundle.Decision{Decision: "require_approval", RequiredApprovals: 1, RequiredApproverRoles: []string{"authorizer"}}, policycanary.Loosened},
		{"zero is one", asks(0), auditbundle.Decision{Decision: "require_approval", RequiredApprovals: 1, RequiredApproverRoles: []string{task.DefaultApproverRole}}, ""},
		{"a role added", asks(1, "authorizer"), auditbundle.Decision{Decision: "require_approval", RequiredApproverRoles: []string{"authorizer", "finance"}}, policycanary.Loosened},
		{"a role removed", asks(1, "authorizer", "finance"), auditbundle.Decision{Decision: "require_approval", RequiredApproverRoles: []string{"finance"}}, policycanary.Tightened},
		{"a role swapped", asks(1, "authorizer"), auditbundle.Decision{Decision: "require_approval", RequiredApproverRoles: []string{"finance"}}, policycanary.Loosened},
		{"reasons only", &stewardv1.PolicySnapshot{Decision: allow, Reasons: []string{"a"}}, auditbundle.Decision{Decision: "allow", Reasons: []string{"b"}}, ""},
		{"a tool that always asks still asks", &stewardv1.PolicySnapshot{Decision: approval, Reasons: []string{"reads change nothing", always}},
			auditbundle.Decision{Decision: "allow", Reasons: []string{"reads change nothing"}}, ""},
		{"a tool that always asks, now denied", &stewardv1.PolicySnapshot{Decision: approval, Reasons: []string{always}},
			auditbundle.Decision{Decision: "deny"}, policycanary.Tightened},
		// Policy itself asked, so governance added no reason: the
		// contract, in the input, still asks when the candidate allows.
		{"a tool that always asks, asked by policy, now allowed", &stewardv1.PolicySnapshot{Decision: approval, Reasons: []string{"writes need a person"}},
			auditbundle.Decision{Decision: "allow"}, ""},
		{"a tool that does not always ask: an allow stays one", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{Decision: "allow"}, ""},
		{"a context item still holds", &stewardv1.PolicySnapshot{Decision: deny, Reasons: []string{"context item c1 may not go to a model"}},
			auditbundle.Decision{Decision: "allow"}, ""},
	} {
		can := policycanary.New(echo, "rev-next")
		rec := recorded(1, "pay", c.was, c.got)
		if strings.Contains(c.name, "always asks") { // the tool's contract asks a person for every call
			rec.Input = withTool(t, rec.Input)
			rec.Snapshot.InputHash = policystore.InputHash(rec.Input)
		}
		can.Add(context.Background(), rec)
		r := can.Report()
		if r.Reevaluated != 1 {
			t.Errorf("%s: re-evaluated %d, errors %v", c.name, r.Reevaluated, r.Errors)
			continue
		}
		got := policycanary.Direction("")
		if len(r.Changes) == 1 {
			got = r.Changes[0].Direction
		}
		if got != c.want || len(r.Changes) > 1 {
			t.Errorf("%s: %q (%v), want %q", c.name, got, r.Changes, c.want)
		}
	}
}

// TestReport: the not re-evaluable counted by why and never evaluated, an
// input sent once serving every snapshot of its hash, groups counted, and
// the exit code's precedence: an error over a loosening over a
// tightening.
func TestReport(t *testing.T) {
	ctx := context.Background()
	can := policycanary.New(echo, "rev-next")
	for i := range 3 {
		can.Add(ctx, recorded(i, "search", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{Decision: "deny", Reasons: []string{"retired"}}))
	}
	again := recorded(9, "search", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{})
	again.Snapshot.InputHash = policystore.InputHash(recorded(0, "search", &stewardv1.PolicySnapshot{}, auditbundle.Decision{Decision: "deny", Reasons: []string{"retired"}}).Input)
	again.Input = nil // the input of snapshot 0, sent with it
	can.Add(ctx, again)
	notKept := recorded(4, "search", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{})
	notKept.Snapshot.InputKept = false
	notHeld := recorded(5, "search", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{Reasons: []string{"an input of its own"}})
	notHeld.Input = nil
	revision := recorded(6, "", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{})
	revision.Kind = stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_CONTRACT_REVISION
	held := recorded(7, "", &stewardv1.PolicySnapshot{Decision: deny, Reasons: []string{task.PlanChangedReason("it now asks for 2 approvals")}}, auditbundle.Decision{Decision: "allow"})
	held.Kind = stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_PLAN
	for _, rec := range []*stewardv1.RecordedSnapshot{notKept, notHeld, revision, held} {
		can.Add(ctx, rec)
	}
	r := can.Report()
	if r.Snapshots != 8 || r.Reevaluated != 4 || r.Count(policycanary.Tightened) != 4 {
		t.Errorf("read %d, re-evaluated %d, tightened %d; want 8, 4, 4", r.Snapshots, r.Reevaluated, r.Count(policycanary.Tightened))
	}
	for _, why := range []string{policycanary.NotKept, policycanary.NotHeld, policycanary.RevisionSnapshot, policycanary.HeldPlan} {
		if r.NotReevaluable[why] != 1 {
			t.Errorf("not re-evaluable %q: %d, want 1 (%v)", why, r.NotReevaluable[why], r.NotReevaluable)
		}
	}
	want := policycanary.Group{Direction: policycanary.Tightened, Tool: "search", Transition: "allow → deny", Reason: "retired", Count: 4}
	if len(r.Groups) != 1 || r.Groups[0] != want {
		t.Errorf("groups %+v, want %+v", r.Groups, want)
	}
	if r.ExitCode() != policycanary.ExitTightened {
		t.Errorf("tightened only: exit %d", r.ExitCode())
	}
	can.Add(ctx, recorded(10, "wire", &stewardv1.PolicySnapshot{Decision: deny}, auditbundle.Decision{Decision: "allow"}))
	if r := can.Report(); r.ExitCode() != policycanary.ExitLoosened || r.Groups[0].Direction != policycanary.Loosened {
		t.Errorf("a loosening beside tightenings: exit %d, groups %+v; want 1, the loosening first", r.ExitCode(), r.Groups)
	}
	broken := recorded(11, "wire", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{})
	broken.Input = []byte("{}")
	can.Add(ctx, broken)
	if r := can.Report(); r.ExitCode() != policycanary.ExitError || len(r.Errors) != 1 {
		t.Errorf("an evaluation that failed: exit %d, errors %v; want 3", r.ExitCode(), r.Errors)
	}
	if r := policycanary.New(echo, "rev").Report(); r.ExitCode() != policycanary.ExitUnchanged {
		t.Errorf("nothing read: exit %d", r.ExitCode())
	}
	// Read, but none re-evaluable: the canary checked nothing.
	none := policycanary.New(echo, "rev")
	lost := recorded(12, "wire", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{Decision: "allow"})
	lost.Snapshot.InputKept, lost.Input = false, nil
	none.Add(ctx, lost)
	if r := none.Report(); r.ExitCode() != policycanary.ExitError || r.NotReevaluable[policycanary.NotKept] != 1 {
		t.Errorf("one read, none re-evaluable: exit %d, not re-evaluable %v; want 3", r.ExitCode(), r.NotReevaluable)
	}
}

// An input that does not hash to its snapshot's input_hash is not the
// input that was judged: an error, never re-evaluated.
func TestAnInputNotItsHashIsAnError(t *testing.T) {
	can := policycanary.New(echo, "rev-next")
	forged := recorded(1, "search", &stewardv1.PolicySnapshot{Decision: allow}, auditbundle.Decision{Decision: "deny"})
	forged.Input = []byte(`{"decision": "allow"}`)
	can.Add(context.Background(), forged)
	r := can.Report()
	if r.Reevaluated != 0 || len(r.Changes) != 0 || len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "snap-1") || r.ExitCode() != policycanary.ExitError {
		t.Errorf("re-evaluated %d, changes %v, errors %v, exit %d; want an error naming snap-1, exit 3", r.Reevaluated, r.Changes, r.Errors, r.ExitCode())
	}
}
