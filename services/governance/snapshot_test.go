package governance_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// TestPolicyIsEvaluatedOnceWhileTheTaskMoves: the task gets another event
// while policy is being evaluated for its proposal. The evaluation runs
// before the conditional write, so the write goes through on the task as
// it is then, with the one snapshot; were it inside the write's build, the
// conflict would run the evaluation again.
func TestPolicyIsEvaluatedOnceWhileTheTaskMoves(t *testing.T) {
	e := newHarness(t)
	var (
		evaluations atomic.Int32
		first       sync.Once
		evaluating  = make(chan struct{})
		resume      = make(chan struct{})
	)
	e.onEvaluate = func() {
		evaluations.Add(1)
		first.Do(func() { close(evaluating); <-resume })
	}
	e.start(t, withoutSigner)
	e.create(t, "moving", "user:ana", credContract([]string{"search"}, nil))
	id := e.propose(t, "moving", "s1", "search")
	select {
	case <-evaluating:
	case <-time.After(30 * time.Second):
		close(resume)
		t.Fatal("policy was never evaluated")
	}
	e.Append("moving", &stewardv1.BudgetConsumed{Tokens: 1, Source: "model:x"})
	close(resume)
	e.waitStatus("moving", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.Settle(governance.PlaneName)
	if n := evaluations.Load(); n != 1 {
		t.Errorf("policy was evaluated %d times for one proposal, want once", n)
	}
	if n, _ := e.snapshots(t, "moving"); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
}

// askingTool asks a person for every call.
var askingTool = &stewardv1.ToolContract{Name: "ask", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
	DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC, DefaultApproval: stewardv1.ApprovalRule_APPROVAL_RULE_ALWAYS}

// TestToolThatAlwaysAsksIsAsked: a tool registered with default_approval
// ALWAYS waits for a person even under a bundle that allows everything
// and never reads the field; a tool without it runs at once.
func TestToolThatAlwaysAsksIsAsked(t *testing.T) {
	e := newHarness(t)
	e.register(t, askingTool)
	dir := t.TempDir()
	allow := "package steward.policy\n\ndecision := {\"decision\": \"allow\", \"reasons\": [\"allow all\"]}\n"
	if err := os.WriteFile(filepath.Join(dir, "allow.rego"), []byte(allow), 0o600); err != nil {
		t.Fatal(err)
	}
	engine, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	e.start(t, withoutSigner, func(c *governance.Config) { c.Engine = engine })
	e.create(t, "always", "user:ana", credContract([]string{"ask", "search"}, nil))
	asked := e.propose(t, "always", "a1", "ask")
	free := e.propose(t, "always", "s1", "search")
	a := e.waitStatus("always", asked, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	e.waitStatus("always", free, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	if s := a.GetSnapshot(); s.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL ||
		!strings.Contains(strings.Join(s.GetReasons(), "; "), "APPROVAL_RULE_ALWAYS") {
		t.Errorf("snapshot %v, want require_approval naming APPROVAL_RULE_ALWAYS", s)
	}
	if roles := a.GetApproval().GetRequiredRoles(); len(roles) != 1 || roles[0] != governance.DefaultApproverRole {
		t.Errorf("approval asks roles %v, want [%s]", roles, governance.DefaultApproverRole)
	}
}
