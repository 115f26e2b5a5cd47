package task_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// as is an event and the principal who recorded it.
type as struct {
	who string
	p   event.Payload
}

// foldAs folds a task with contract k, started, then steps, each recorded
// by its principal. It returns the task before the last step and the
// error the last step got.
func foldAs(t *testing.T, k *stewardv1.TaskContract, steps ...as) (*stewardv1.Task, error) {
	t.Helper()
	tk := &stewardv1.Task{}
	all := append([]as{{"agent", &stewardv1.TaskCreated{Contract: k}}, {"steward", started()}}, steps...)
	for i, s := range all {
		ev := stewardtest.Event(t, "t1", s.p)
		ev.Actor.Principal = s.who
		if err := task.Apply(tk, ev, uint64(i+1)); err != nil {
			if i != len(all)-1 {
				t.Fatalf("step %d (%T): %v", i, s.p, err)
			}
			return tk, err
		}
	}
	return tk, nil
}

func submitted(name string, version uint32, actionID string) *stewardv1.ArtifactSubmitted {
	return &stewardv1.ArtifactSubmitted{Artifact: &stewardv1.Artifact{
		Name: name, MediaType: "text/plain", Uri: "kv://x/" + name, Sha256: strings.Repeat("0f", 32), SizeBytes: 3, Version: version, ActionId: actionID,
	}}
}

func produced(round uint32, passed, review bool) *stewardv1.TaskProduced {
	return &stewardv1.TaskProduced{Round: round, ReviewRequired: review, Artifacts: []string{"report@1"},
		Checks: []*stewardv1.CriterionResult{{CriterionId: "c1", Passed: passed}}}
}

// criteria are the one criterion produced() checks.
var criteria = []*stewardv1.AcceptanceCriterion{{Id: "c1", Expression: "true"}}

func reviewed() *stewardv1.TaskContract {
	return &stewardv1.TaskContract{Intent: "i", RequesterRef: "user:req", AcceptanceOwnerRef: "user:owner", SeparationOfDuties: true, AcceptanceCriteria: criteria}
}

// TestProducedIsNotAccepted walks a task through failed checks, a return
// and an acceptance, and checks who may decide.
func TestProducedIsNotAccepted(t *testing.T) {
	k := reviewed()
	tk, err := foldAs(t, k,
		as{"agent", submitted("report", 1, "")},
		as{"agent", produced(1, false, true)},
	)
	if err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || !strings.Contains(tk.StatusReason, "acceptance checks failed: c1") ||
		tk.Acceptance[0].Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED {
		t.Fatalf("failed checks: %v %q %v", tk.GetStatus(), tk.GetStatusReason(), err)
	}
	steps := []as{
		{"agent", submitted("report", 1, "")},
		{"agent", produced(1, false, true)},
		{"agent", produced(2, true, true)},
		{"user:owner", &stewardv1.TaskReturned{Round: 2, Reasons: []string{"cite sources"}}},
		{"agent", produced(3, true, true)},
	}
	tk, err = foldAs(t, k, steps...)
	if err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_PRODUCED || len(tk.Acceptance) != 3 ||
		tk.Acceptance[1].Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_RETURNED || tk.Acceptance[1].DecidedBy != "user:owner" {
		t.Fatalf("after a return and a revision: %v %v", tk.GetStatus(), err)
	}
	refusals := []struct {
		name string
		step as
		code errs.Code
	}{
		{"someone else accepts", as{"user:eve", &stewardv1.TaskAccepted{Round: 3}}, errs.PermissionDenied},
		{"an earlier round", as{"user:owner", &stewardv1.TaskAccepted{Round: 2}}, errs.FailedPrecondition},
		{"a return without reasons", as{"user:owner", &stewardv1.TaskReturned{Round: 3}}, errs.Invalid},
		{"a produced task produced again", as{"agent", produced(4, true, true)}, errs.FailedPrecondition},
		{"an artifact while under review", as{"agent", submitted("report", 2, "")}, errs.FailedPrecondition},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			if _, err := foldAs(t, k, append(steps, r.step)...); !errs.Is(err, r.code) {
				t.Fatalf("err = %v, want %v", err, r.code)
			}
		})
	}
	t.Run("the creator under separation of duties", func(t *testing.T) {
		k := reviewed()
		k.AcceptanceOwnerRef = "agent" // who created it, under another requester_ref
		if _, err := foldAs(t, k, steps[0], steps[1], steps[2], as{"agent", &stewardv1.TaskAccepted{Round: 2}}); !errs.Is(err, errs.PermissionDenied) {
			t.Fatalf("err = %v, want permission denied", err)
		}
	})
	t.Run("the requester under separation of duties", func(t *testing.T) {
		k := reviewed()
		k.AcceptanceOwnerRef = "user:req" // CreateTask refuses this; the fold still does
		if _, err := foldAs(t, k, steps[0], steps[1], steps[2], as{"user:req", &stewardv1.TaskAccepted{Round: 2}}); !errs.Is(err, errs.PermissionDenied) {
			t.Fatalf("err = %v, want permission denied", err)
		}
	})
	t.Run("who produced it under separation of duties", func(t *testing.T) {
		// Without --auth callers name themselves: the owner may claim to
		// be the one producing; then the owner may not accept.
		if _, err := foldAs(t, k, steps[0], steps[1], as{"user:owner", produced(2, true, true)}, as{"user:owner", &stewardv1.TaskAccepted{Round: 2}}); !errs.Is(err, errs.PermissionDenied) {
			t.Fatalf("err = %v, want permission denied", err)
		}
	})
	tk, err = foldAs(t, k, append(steps, as{"user:owner", &stewardv1.TaskAccepted{Round: 3, Reason: "good"}})...)
	if err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED || tk.Acceptance[2].Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED {
		t.Fatalf("accepted: %v %v", tk.GetStatus(), err)
	}
}

func TestAcceptedByChecksWithoutReview(t *testing.T) {
	k := &stewardv1.TaskContract{Intent: "i", AcceptanceCriteria: criteria}
	tk, err := foldAs(t, k, as{"agent", submitted("report", 1, "")}, as{"agent", produced(1, true, false)})
	if err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED || tk.Acceptance[0].DecidedBy != task.CriteriaAcceptor {
		t.Fatalf("%v %v", tk.GetStatus(), err)
	}
	// The round must be the contract's: its review rule, one check per
	// criterion in order.
	for name, p := range map[string]*stewardv1.TaskProduced{
		"review with no owner": produced(1, true, true),
		"a check left out":     {Round: 1},
		"another check":        {Round: 1, Checks: []*stewardv1.CriterionResult{{CriterionId: "c9", Passed: true}}},
	} {
		if _, err := foldAs(t, k, as{"agent", p}); !errs.Is(err, errs.FailedPrecondition) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Nor may a round skip the owner's review the contract asks for.
	if _, err := foldAs(t, reviewed(), as{"agent", produced(1, true, false)}); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("review skipped: %v", err)
	}
}

func TestArtifactsAreChecked(t *testing.T) {
	k := &stewardv1.TaskContract{Intent: "i", AcceptanceCriteria: criteria}
	for name, tc := range map[string]struct {
		steps []as
		code  errs.Code
	}{
		"a skipped version":        {[]as{{"agent", submitted("r", 2, "")}}, errs.FailedPrecondition},
		"an action that never ran": {[]as{{"agent", submitted("r", 1, "a9")}}, errs.Invalid},
		"a bad hash": {[]as{{"agent", &stewardv1.ArtifactSubmitted{Artifact: &stewardv1.Artifact{
			Name: "r", Uri: "u", Sha256: "XYZ", Version: 1}}}}, errs.Invalid},
		"a negative size": {[]as{{"agent", &stewardv1.ArtifactSubmitted{Artifact: &stewardv1.Artifact{
			Name: "r", Uri: "u", Sha256: strings.Repeat("0", 64), Version: 1, SizeBytes: -1}}}}, errs.Invalid},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := foldAs(t, k, tc.steps...); !errs.Is(err, tc.code) {
				t.Fatalf("err = %v, want %v", err, tc.code)
			}
		})
	}
	if _, err := foldAs(t, k, as{"agent", dispatchedAction("a1")[0]}, as{"agent", produced(1, true, false)}); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("produced with an action just proposed: %v", err)
	}
	var steps []as
	for _, p := range dispatchedAction("a1") {
		steps = append(steps, as{"steward", p})
	}
	if _, err := foldAs(t, k, append(steps, as{"agent", produced(1, true, false)})...); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("produced with a call under way: %v", err)
	}
	steps = append(steps,
		as{"steward", &stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1}}},
		as{"agent", submitted("r", 1, "a1")}, as{"agent", submitted("r", 2, "")}, as{"agent", submitted("s", 1, "")},
	)
	tk, err := foldAs(t, k, steps...)
	if err != nil {
		t.Fatal(err)
	}
	latest := task.LatestArtifacts(tk)
	if len(latest) != 2 || task.ArtifactRef(latest[0]) != "r@2" || task.ArtifactRef(latest[1]) != "s@1" || task.FindArtifact(tk, "r@1").GetActionId() != "a1" {
		t.Fatalf("latest %v", latest)
	}
}
