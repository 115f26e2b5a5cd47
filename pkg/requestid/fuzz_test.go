package requestid_test

import (
	"regexp"
	"testing"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/terminal"
)

// taskIDRule is eventlog.TaskIDRule as a regular expression: the rule
// written a second way, to check the hand-written loop against.
var taskIDRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// FuzzIdentities checks the rules that say who a caller is and what a
// request names, and the ids derived from them. A task id (or a service
// key) is valid exactly when it matches its documented rule. A principal
// the edge accepts prints as itself on a terminal, and a request id it
// accepts passes the edge's limits. Every id derived from accepted parts
// is a valid task id, and two different callers' request ids, or two
// different request ids, never derive the same task, event or action:
// the NUL-joined parts of a derivation cannot run into each other.
func FuzzIdentities(f *testing.F) {
	f.Add("alice", "t1", "req-1", "bob", "req-1")
	f.Add("alice", "t-1_x", "a\x00principal\x00b", "alice\x00request\x00a", "b")
	f.Add("steward", "t.1", "", "Steward\u200b", "\xff")
	f.Add("ſteward", "t>", "r", "alice ", "r ")
	f.Add("a\u202eb", "x*", "request", "ANONYMOUS", "tenant")
	f.Fuzz(func(t *testing.T, p1, taskID, r1, p2, r2 string) {
		valid := eventlog.ValidTaskID(taskID)
		if valid != taskIDRule.MatchString(taskID) {
			t.Fatalf("ValidTaskID(%q) = %t, against its rule", taskID, valid)
		}
		if (eventlog.CheckServiceKey("key", taskID) == nil) != valid {
			t.Fatalf("CheckServiceKey and ValidTaskID disagree on %q", taskID)
		}
		callers := [2]struct{ principal, requestID string }{{p1, r1}, {p2, r2}}
		for _, c := range callers {
			if !accepted(t, c.principal, c.requestID) {
				return
			}
		}
		if !eventlog.ValidTaskID(requestid.ForPrincipal(p1).TaskID(r1)) {
			t.Fatalf("the task id derived from (%q, %q) is not a task id", p1, r1)
		}
		same := p1 == p2 && r1 == r2
		distinct(t, same, requestid.ForPrincipal(p1).TaskID(r1), requestid.ForPrincipal(p2).TaskID(r2))
		distinct(t, same, requestid.ForPrincipal(p1).EventID("t1", "CreateTask", r1), requestid.ForPrincipal(p2).EventID("t1", "CreateTask", r2))
		if !valid {
			return
		}
		distinct(t, same, requestid.ForProposal(p1, taskID).TaskID(r1), requestid.ForProposal(p2, taskID).TaskID(r2))
		distinct(t, r1 == r2, action.ID(taskID, r1), action.ID(taskID, r2))
		distinct(t, false, requestid.ForPrincipal(p1).TaskID(r1), requestid.ForProposal(p2, taskID).TaskID(r2))
	})
}

// distinct fails t unless ids a and b, derived from two sets of parts,
// are equal exactly when the parts are.
func distinct(t *testing.T, sameParts bool, a, b string) {
	t.Helper()
	if (a == b) != sameParts {
		t.Fatalf("derived %s and %s from parts that are the same: %t", a, b, sameParts)
	}
}

// accepted reports whether the edge takes principal and requestID, and
// checks that what it takes prints as itself and passes its limits.
func accepted(t *testing.T, principal, requestID string) bool {
	t.Helper()
	if rpc.CheckPrincipal("principal", principal) != nil || requestid.Check(requestID) != nil {
		return false
	}
	if shown := terminal.EscapeLine(principal); shown != principal {
		t.Fatalf("principal %q is accepted, but prints as %q", principal, shown)
	}
	req := &stewardv1.CreateTaskRequest{RequestId: requestID}
	if err := limits.Check(req.ProtoReflect()); err != nil {
		t.Fatalf("request id %q is accepted, but the edge's limits refuse it: %v", requestID, err)
	}
	return true
}
