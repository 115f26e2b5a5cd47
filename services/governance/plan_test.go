package governance_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// planner is the agent that submits the tests' plans.
const planner = "agent:planner"

// submitPlan records version of taskID's plan, one action step per tool,
// as the control plane records a plan it validated, and returns its hash.
func (e *harness) submitPlan(t *testing.T, taskID string, version uint32, tools ...string) string {
	t.Helper()
	p := &stewardv1.Plan{Version: version, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE}
	for i, tool := range tools {
		p.Steps = append(p.Steps, &stewardv1.Step{Id: fmt.Sprintf("s%d", i), Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: tool, Target: "acct:1"}}})
	}
	return e.submit(t, taskID, p)
}

// submit records plan p of taskID as SubmitPlan does: hashed, and, when
// it revises the plan in force, with the revision.
func (e *harness) submit(t *testing.T, taskID string, p *stewardv1.Plan) string {
	t.Helper()
	hash, err := plan.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	s := &stewardv1.PlanSubmitted{Plan: p, PlanHash: hash}
	if cur := e.WaitTask(taskID, func(*stewardv1.Task) bool { return true }).Plan; cur != nil {
		r, err := plan.Diff(cur.Plan, p)
		if err != nil {
			t.Fatal(err)
		}
		s.Revision = &stewardv1.PlanRevision{ReplacesVersion: cur.Version, Kept: r.Kept, Changed: r.Changed, Added: r.Added, Withdrawn: r.Withdrawn}
	}
	ev := stewardtest.Event(t, taskID, s)
	ev.Actor.Principal = planner
	e.AppendEvents(taskID, ev)
	return hash
}

// judged waits until governance has judged the plan version with hash,
// and ok holds of it; it returns the task then.
func (e *harness) judged(taskID, hash string, ok func(*stewardv1.PlanState) bool) *stewardv1.Task {
	return e.WaitTask(taskID, func(tk *stewardv1.Task) bool {
		ps := tk.Plan
		return ps.GetPlanHash() == hash && ps.GetGovernance() != stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING && ok(ps)
	})
}

func anyJudgement(*stewardv1.PlanState) bool { return true }

func awaitingApproval(ps *stewardv1.PlanState) bool { return ps.Approval != nil }

// approvedOrNot is a plan judged after its approval.
func approvedOrNot(ps *stewardv1.PlanState) bool {
	return ps.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL
}

// stopped says why governance stopped tk's plan for good, or "".
func stopped(tk *stewardv1.Task) string {
	switch ps := tk.Plan; ps.GetGovernance() {
	case stewardv1.PlanGovernance_PLAN_GOVERNANCE_DENIED:
		return "denied: " + strings.Join(ps.Snapshot.GetReasons(), "; ")
	case stewardv1.PlanGovernance_PLAN_GOVERNANCE_REJECTED:
		return "rejected by " + ps.Approval.GetDecidedBy()
	}
	return ""
}

// standing is where tk's plan stands, in words.
func standing(tk *stewardv1.Task) string { return task.PlanGovernanceName(tk.Plan.GetGovernance()) }

// votePlan decides the approval of taskID's plan version with hash.
func (e *harness) votePlan(approvalID, hash string, who rpc.Identity, d stewardv1.ApprovalDecision) (*stewardv1.Approval, error) {
	return e.plane.Decide(context.Background(), who, &stewardv1.DecideApprovalRequest{ApprovalId: approvalID, PlanHash: hash, Decision: d, Comment: "by " + who.Principal})
}

// withPlanRule makes the plane decide under the default bundle with
// plan.rego replaced by rego; "" leaves the bundle without a plan rule.
func withPlanRule(t *testing.T, rego string) func(*governance.Config) {
	t.Helper()
	_, engine := planBundle(t, rego)
	return func(c *governance.Config) { c.Engine = engine }
}

// planBundle writes the bundle withPlanRule decides under to a directory,
// and returns it with its engine: a test may change the plan rule there
// and reload.
func planBundle(t *testing.T, rego string) (string, *policy.Engine) {
	t.Helper()
	action, err := os.ReadFile("policy/default/steward.rego")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "steward.rego"), action, 0o600); err != nil {
		t.Fatal(err)
	}
	if rego != "" {
		writePlanRule(t, dir, rego)
	}
	engine, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, engine
}

func writePlanRule(t *testing.T, dir, rego string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "plan.rego"), []byte(rego), 0o600); err != nil {
		t.Fatal(err)
	}
}

// wires is four irreversible steps: more than the default plan rule lets
// start without a person.
var wires = []string{"wire", "wire", "wire", "wire"}

func planContract() *stewardv1.TaskContract {
	return credContract([]string{"search", "wire"}, []string{"payments:write"})
}

// TestPlanAllowed: a plan of reads is allowed by the default plan rule and
// may start, with nobody asked. Redelivered (a second plane from the start
// of the log), it is not evaluated or recorded again.
func TestPlanAllowed(t *testing.T) {
	e := newHarness(t)
	var evaluations atomic.Int32
	e.onEvaluate = func() { evaluations.Add(1) }
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	hash := e.submitPlan(t, "p", 1, "search", "search", "wire")
	tk := e.judged("p", hash, anyJudgement)
	snap := tk.Plan.Snapshot
	if snap.Decision != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW || !task.PlanRuns(tk.Plan) || tk.Plan.Approval != nil {
		t.Fatalf("plan policy %v: want an allow, the plan free to start", tk.Plan)
	}
	if snap.RiskTier != stewardv1.RiskTier_RISK_TIER_HIGH || snap.BundleRevision == "" || snap.InputHash == "" {
		t.Errorf("snapshot %v: want the risk of its irreversible step, the bundle's revision and the input's hash", snap)
	}
	e.Settle(governance.PlaneName)
	check := func(when string) {
		t.Helper()
		n := e.counts(t, "p")
		if n[event.TypePlanEvaluated] != 1 || n[event.TypeApprovalRequired] != 0 || evaluations.Load() != 1 {
			t.Fatalf("%s: %d evaluations recorded, %d approvals, %d made; want one of each evaluation, no approval", when,
				n[event.TypePlanEvaluated], n[event.TypeApprovalRequired], evaluations.Load())
		}
	}
	check("first delivery")
	e.redeliver(t)
	check("after redelivery")
}

// TestPlanDenied: a plan that policy denies never may start, and nobody is
// asked about it.
func TestPlanDenied(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	// A tool nobody registered (validation refuses it; policy must too):
	// its effect class cannot be judged.
	hash := e.submitPlan(t, "p", 1, "search", "ghost")
	tk := e.judged("p", hash, anyJudgement)
	if tk.Plan.Snapshot.Decision != stewardv1.PolicyDecision_POLICY_DECISION_DENY || task.PlanRuns(tk.Plan) ||
		!strings.Contains(stopped(tk), `step "s1" calls tool "ghost"`) {
		t.Fatalf("plan policy %v, refused %q: want a deny naming the step", tk.Plan, stopped(tk))
	}
	e.Settle(governance.PlaneName)
	if n := e.counts(t, "p"); n[event.TypeApprovalRequired] != 0 {
		t.Fatalf("%d approvals asked for a denied plan", n[event.TypeApprovalRequired])
	}
}

// TestABundleWithoutAPlanRuleAllowsPlans: the documented default.
func TestABundleWithoutAPlanRuleAllowsPlans(t *testing.T) {
	e := newHarness(t)
	e.start(t, withPlanRule(t, ""))
	e.create(t, "p", "user:ana", planContract())
	hash := e.submitPlan(t, "p", 1, wires...)
	tk := e.judged("p", hash, anyJudgement)
	if !task.PlanRuns(tk.Plan) || tk.Plan.Snapshot.Reasons[0] != policy.NoPlanRule {
		t.Fatalf("plan policy %v: want the allow of a bundle with no plan rule", tk.Plan)
	}
}

// TestPlanApproval: a plan that needs a person starts only after an
// approval bound to its hash. The approval is listed with the plan's
// version and hash; its submitter may not approve it, nor may anyone name
// another hash or an action's; the authorizer's vote, signed over the
// plan hash, lets it start.
func TestPlanApproval(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	hash := e.submitPlan(t, "p", 1, wires...)
	tk := e.judged("p", hash, awaitingApproval)
	ap := tk.Plan.Approval
	if task.PlanRuns(tk.Plan) || ap.PlanHash != hash || ap.PlanVersion != 1 || ap.ActionId != "" || ap.RequestedBy != planner ||
		strings.Join(ap.RequiredRoles, ",") != "authorizer" || !strings.Contains(strings.Join(ap.PolicyReasons, ";"), "4 irreversible calls") {
		t.Fatalf("approval %v: want one of plan version 1, bound to %s, asked of the authorizer", ap, hash)
	}
	if err := e.plane.Approvals().Sync(context.Background(), e.Log); err != nil { // the index follows the log
		t.Fatal(err)
	}
	listed := e.plane.Approvals().List("p", true)
	if len(listed) != 1 || listed[0].ApprovalId != ap.ApprovalId || listed[0].PlanHash != hash {
		t.Fatalf("pending approvals %v: want the plan's", listed)
	}

	refusals := []struct {
		name  string
		req   *stewardv1.DecideApprovalRequest
		who   rpc.Identity
		code  errs.Code
		field string
	}{
		{"the submitter", &stewardv1.DecideApprovalRequest{ApprovalId: ap.ApprovalId, PlanHash: hash, Decision: approve},
			rpc.Identity{Principal: planner, Roles: []string{"authorizer"}}, errs.PermissionDenied, ""},
		{"another hash", &stewardv1.DecideApprovalRequest{ApprovalId: ap.ApprovalId, PlanHash: strings.Repeat("0", 64), Decision: approve},
			authorizer("user:di"), errs.Invalid, "plan_hash"},
		{"an action's hash", &stewardv1.DecideApprovalRequest{ApprovalId: ap.ApprovalId, ActionHash: hash, Decision: approve},
			authorizer("user:di"), errs.Invalid, "plan_hash"},
		{"an amendment", &stewardv1.DecideApprovalRequest{ApprovalId: ap.ApprovalId, PlanHash: hash, Decision: amend, AmendedParams: &structpb.Struct{}},
			authorizer("user:di"), errs.Invalid, "decision"},
		{"a person executes it", &stewardv1.DecideApprovalRequest{ApprovalId: ap.ApprovalId, PlanHash: hash, Decision: personExecutes},
			authorizer("user:di"), errs.Invalid, "decision"},
	}
	for _, r := range refusals {
		_, err := e.plane.Decide(context.Background(), r.who, r.req)
		var ee *errs.Error
		if !errs.Is(err, r.code) || !errors.As(err, &ee) || ee.Field != r.field {
			t.Errorf("%s: Decide = %v, want %s on %q", r.name, err, r.code, r.field)
		}
	}

	decided, err := e.votePlan(ap.ApprovalId, hash, authorizer("user:di"), approve)
	if err != nil {
		t.Fatal(err)
	}
	if decided.Decision != approve || decided.DecidedBy != "user:di" {
		t.Fatalf("decided %v", decided)
	}
	tk = e.judged("p", hash, approvedOrNot)
	if !task.PlanRuns(tk.Plan) || standing(tk) != "approved" || tk.Plan.Approval.ApprovalId != ap.ApprovalId ||
		tk.Plan.Snapshot.Decision != stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL {
		t.Fatalf("plan policy %v: want the approved plan free to start", tk.Plan)
	}
	if v := tk.Plan.Approval.Votes[0]; v.Signed == nil {
		t.Fatal("the vote is not signed")
	}
	// Redelivered, nothing is recorded twice.
	e.Settle(governance.PlaneName)
	e.redeliver(t)
	if n := e.counts(t, "p"); n[event.TypePlanEvaluated] != 2 || n[event.TypeApprovalRequired] != 1 || n[event.TypeApprovalDecided] != 1 {
		t.Fatalf("after redelivery: %d evaluations, %d approvals, %d votes; want 2, 1, 1", n[event.TypePlanEvaluated], n[event.TypeApprovalRequired], n[event.TypeApprovalDecided])
	}
}

// planAwaitingApproval starts a plane under the default bundle and
// submits to task p a plan of wires, which its plan rule holds for the
// authorizer's approval; it returns the plan's hash and that approval.
func planAwaitingApproval(t *testing.T) (*harness, string, *stewardv1.Approval) {
	t.Helper()
	e := newHarness(t)
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	hash := e.submitPlan(t, "p", 1, wires...)
	return e, hash, e.judged("p", hash, awaitingApproval).Plan.Approval
}

// TestPlanRejected: a rejected plan never starts; nothing more is
// evaluated for it.
func TestPlanRejected(t *testing.T) {
	e, hash, ap := planAwaitingApproval(t)
	if _, err := e.votePlan(ap.ApprovalId, hash, authorizer("user:di"), reject); err != nil {
		t.Fatal(err)
	}
	e.Settle(governance.PlaneName)
	tk := e.judged("p", hash, anyJudgement)
	if task.PlanRuns(tk.Plan) || !strings.Contains(stopped(tk), "rejected by user:di") {
		t.Fatalf("plan policy %v, refused %q: want the plan refused", tk.Plan, stopped(tk))
	}
	if n := e.counts(t, "p"); n[event.TypePlanEvaluated] != 1 {
		t.Fatalf("%d evaluations after a rejection, want 1", n[event.TypePlanEvaluated])
	}
}

// TestARevisionNeedsItsOwnApproval: a revision closes the approval of the
// version it replaces; that approval takes no more votes, the old hash
// does not decide the new approval, a vote on the old approval appended
// to the log is refused by the fold, and only the new approval, bound to
// the new hash, lets the revision start.
func TestARevisionNeedsItsOwnApproval(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	oldHash := e.submitPlan(t, "p", 1, wires...)
	old := e.judged("p", oldHash, awaitingApproval).Plan.Approval
	newHash := e.submitPlan(t, "p", 2, append([]string{"search"}, wires...)...)
	fresh := e.judged("p", newHash, awaitingApproval).Plan.Approval
	if fresh.ApprovalId == old.ApprovalId || fresh.PlanHash != newHash || fresh.PlanVersion != 2 {
		t.Fatalf("the revision's approval %v: want its own, bound to %s", fresh, newHash)
	}
	closed, err := e.plane.Approvals().Fresh(context.Background(), e.Log, old.ApprovalId)
	if err != nil || !closed.Withdrawn {
		t.Fatalf("the old approval %v (%v): want it closed", closed, err)
	}
	if _, err := e.votePlan(old.ApprovalId, oldHash, authorizer("user:di"), approve); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("a vote on the closed approval: %v, want FailedPrecondition", err)
	}
	if _, err := e.votePlan(fresh.ApprovalId, oldHash, authorizer("user:di"), approve); !errs.Is(err, errs.Invalid) {
		t.Errorf("the old hash on the new approval: %v, want InvalidArgument", err)
	}
	stale := stewardtest.Event(t, "p", &stewardv1.ApprovalDecided{ApprovalId: old.ApprovalId, PlanHash: oldHash, Decision: approve, DecidedBy: "user:di"})
	if _, err := e.Tasks.Update(context.Background(), "p", func(*stewardv1.Task) (*stewardv1.Event, error) { return stale, nil }); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("appending a vote on the closed approval: %v, want the fold's refusal", err)
	}
	if tk := e.judged("p", newHash, anyJudgement); task.PlanRuns(tk.Plan) {
		t.Fatalf("the revision may start before its approval: %v", tk.Plan)
	}
	if _, err := e.votePlan(fresh.ApprovalId, newHash, authorizer("user:di"), approve); err != nil {
		t.Fatal(err)
	}
	tk := e.judged("p", newHash, approvedOrNot)
	if !task.PlanRuns(tk.Plan) || standing(tk) != "approved" || tk.Plan.Approval.ApprovalId != fresh.ApprovalId {
		t.Fatalf("plan policy %v: want the revision free to start under its own approval", tk.Plan)
	}
}

// twoForPlans is a plan rule that asks two people for every plan.
const twoForPlans = `package steward.plan

decision := {"decision": "require_approval", "required_approver_roles": ["authorizer"], "required_approvals": 2, "reasons": ["two people own every plan"]}
`

// TestAForgedVoteDoesNotApproveAPlan: a vote appended to the log by
// another hand (governance's NATS user, not its key) is folded, but no
// plan starts on it: alone, or counted with a genuine one.
func TestAForgedVoteDoesNotApproveAPlan(t *testing.T) {
	for _, genuine := range []bool{false, true} {
		t.Run(fmt.Sprintf("with a genuine vote %v", genuine), func(t *testing.T) {
			e := newHarness(t)
			var settings []func(*governance.Config)
			if genuine {
				settings = append(settings, withPlanRule(t, twoForPlans))
			}
			e.start(t, settings...)
			e.create(t, "p", "user:ana", planContract())
			hash := e.submitPlan(t, "p", 1, wires...)
			ap := e.judged("p", hash, awaitingApproval).Plan.Approval
			e.Append("p", &stewardv1.ApprovalDecided{ApprovalId: ap.ApprovalId, PlanHash: hash, Decision: approve, DecidedBy: "user:mallory"})
			if genuine {
				if _, err := e.votePlan(ap.ApprovalId, hash, authorizer("user:di"), approve); err != nil {
					t.Fatal(err)
				}
			}
			e.Settle(governance.PlaneName)
			tk := e.judged("p", hash, anyJudgement)
			if tk.Plan.Approval.Decision != approve || task.PlanRuns(tk.Plan) {
				t.Fatalf("plan policy %v: want the approval folded and the plan not free to start", tk.Plan)
			}
			if n := e.counts(t, "p"); n[event.TypePlanEvaluated] != 1 {
				t.Fatalf("%d evaluations recorded after a forged vote, want 1", n[event.TypePlanEvaluated])
			}
		})
	}
}

// planRule is a plan rule that decides decision for every plan, asking
// role when it asks anyone.
func planRule(decision, role string) string {
	return fmt.Sprintf(`package steward.plan

decision := {"decision": %q, "required_approver_roles": [%q], "reasons": ["the test's plan rule"]}
`, decision, role)
}

// TestPolicyChangedAfterThePlanApproval: the plan rule is replaced while
// the approval waits; the approval given under the old one does not let
// the plan start, and the evaluation after it says why.
func TestPolicyChangedAfterThePlanApproval(t *testing.T) {
	e := newHarness(t)
	dir, engine := planBundle(t, planRule("require_approval", "authorizer"))
	e.start(t, func(c *governance.Config) { c.Engine = engine })
	e.create(t, "p", "user:ana", planContract())
	hash := e.submitPlan(t, "p", 1, "search")
	ap := e.judged("p", hash, awaitingApproval).Plan.Approval
	before := engine.Revision()
	writePlanRule(t, dir, planRule("require_approval", "security"))
	// The plane's own watch may take the change first.
	if _, err := engine.Reload(context.Background()); err != nil || engine.Revision() == before {
		t.Fatalf("reload: %v, revision %s", err, engine.Revision())
	}
	if _, err := e.votePlan(ap.ApprovalId, hash, authorizer("user:di"), approve); err != nil {
		t.Fatal(err)
	}
	tk := e.judged("p", hash, approvedOrNot)
	if task.PlanRuns(tk.Plan) || !strings.Contains(stopped(tk), "policy changed after the approval: it now asks for approval by security, not authorizer; submit the plan again") {
		t.Fatalf("plan policy %v, refused %q: want the plan denied, saying policy changed", tk.Plan, stopped(tk))
	}
}

// TestAForgedPlanApprovalIsNotActedOn: someone holding governance's NATS
// user (not its key) records, before governance does, an evaluation and
// an approval of a plan that ask a role they can get (intern) instead of
// the authorizer. The intern's genuine vote completes that approval, but
// the plan does not start: an approval under another id than governance
// derives is not its own, and one under that id (anyone can derive it)
// meets policy evaluated again, which asks the authorizer: the
// evaluation after the approval denies the plan.
func TestAForgedPlanApprovalIsNotActedOn(t *testing.T) {
	for _, tt := range []struct {
		name        string
		approvalID  func(hash string) string
		evaluations int
	}{
		{"under its own id", func(string) string { return "apv-forged" }, 1},
		{"under governance's id", func(hash string) string { return "apv-" + event.ID("p", "plan", "1", hash, "approval")[:24] }, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newHarness(t)
			e.create(t, "p", "user:ana", planContract())
			hash := e.submitPlan(t, "p", 1, wires...)
			id := tt.approvalID(hash)
			forged := &stewardv1.PolicySnapshot{SnapshotId: "psnap-" + event.ID("p", "plan", "1", hash, "proposal")[:24],
				Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL, RequiredApproverRoles: []string{"intern"}}
			e.Append("p", &stewardv1.PlanEvaluated{Version: 1, PlanHash: hash, Snapshot: forged},
				&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: id, TaskId: "p", PlanVersion: 1, PlanHash: hash, RequiredRoles: []string{"intern"}, RequestedBy: planner}})
			e.start(t)
			if _, err := e.votePlan(id, hash, rpc.Identity{Principal: "user:eve", Roles: []string{"intern"}}, approve); err != nil {
				t.Fatal(err)
			}
			e.Settle(governance.PlaneName)
			tk := e.judged("p", hash, anyJudgement)
			if task.PlanRuns(tk.Plan) || e.counts(t, "p")[event.TypePlanEvaluated] != tt.evaluations {
				t.Fatalf("plan policy %v: want the plan not to start, after %d evaluations", tk.Plan, tt.evaluations)
			}
			if tt.evaluations == 2 && !strings.Contains(stopped(tk), "it now asks for approval by authorizer, not intern") {
				t.Fatalf("refused %q: want the evaluation after the approval to say policy asks the authorizer", stopped(tk))
			}
		})
	}
}

// TestAForeachCountsItsItems: the plan query counts a foreach's calls by
// its max_items, so five wires in one foreach ask a person as five
// separate steps would.
func TestAForeachCountsItsItems(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		{Id: "list", Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: "payees"}}},
		{Id: "pay", DependsOn: []string{"list"}, Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{
			Over: "steps.list.result", MaxItems: 5, Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_Action{Action: &stewardv1.ActionStep{Tool: "wire", TargetExpr: "item"}}}}}},
	}}
	hash, err := plan.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	e.Append("p", &stewardv1.PlanSubmitted{Plan: p, PlanHash: hash})
	tk := e.judged("p", hash, awaitingApproval)
	if got := strings.Join(tk.Plan.Snapshot.Reasons, ";"); got != "the plan may make 5 irreversible calls, more than 3" {
		t.Fatalf("reasons %q: want the foreach's five calls counted", got)
	}
}

// TestNoPermitForAnActionItsPlanWithdrew: an action of a plan step,
// awaiting its approval when a revision withdraws the step before the
// plan driver recorded it as the step's, is refused its permit when the
// approval comes: an action the plan no longer asks for runs only if it
// was permitted before the revision.
func TestNoPermitForAnActionItsPlanWithdrew(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	e.credentialed("p")
	e.judged("p", e.submitPlan(t, "p", 1, "search", "wire"), anyJudgement)
	wire := e.proposeWith(t, "p", "plan-s1-1-h", "wire", "", "agent", map[string]any{"n": 1},
		&stewardv1.ActionRationale{ExpectedImpact: "moves money from acct:1", RollbackPlan: "none: ask for it back"},
		func(a *stewardv1.Action) { a.PlanStepId = "s1" })
	e.waitStatus("p", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	e.judged("p", e.submitPlan(t, "p", 2, "search"), anyJudgement) // s1 withdrawn
	if _, err := e.vote("p", wire, authorizer("user:bo"), approve); err != nil {
		t.Fatal(err)
	}
	a := e.waitStatus("p", wire, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if a.Permit != nil || !strings.Contains(a.Outcome.GetReason(), "its plan step s1 was withdrawn") {
		t.Fatalf("the withdrawn step's action: permit %v, reason %q; want no permit, the withdrawal named", a.Permit, a.Outcome.GetReason())
	}
}

// TestAPlanApprovalClosesWithItsTask: a task that ended takes no vote on
// its plan's approval.
func TestAPlanApprovalClosesWithItsTask(t *testing.T) {
	e, hash, ap := planAwaitingApproval(t)
	e.Append("p", &stewardv1.TaskCancelled{Reason: "not needed"})
	if _, err := e.votePlan(ap.ApprovalId, hash, authorizer("user:di"), approve); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "is cancelled") {
		t.Fatalf("a vote on a cancelled task's plan: %v, want FailedPrecondition", err)
	}
}

// TestAnotherTenantsApprovalIsNotFound: a caller of another tenant learns
// nothing of an approval by naming the wrong kind of hash — not that it is
// a plan's, nor its version, nor an action's id: it is not found, as
// whatever it names.
func TestAnotherTenantsApprovalIsNotFound(t *testing.T) {
	e, hash, planApproval := planAwaitingApproval(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	e.credentialed("t")
	wire := e.propose(t, "t", "w1", "wire")
	a := e.waitStatus("t", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)

	stranger := rpc.Identity{Principal: "user:eve", Roles: []string{"authorizer"}, Tenant: "acme"}
	for name, req := range map[string]*stewardv1.DecideApprovalRequest{
		"a plan's, with its hash":       {ApprovalId: planApproval.ApprovalId, PlanHash: hash, Decision: approve},
		"a plan's, with an action hash": {ApprovalId: planApproval.ApprovalId, ActionHash: hash, Decision: approve},
		"an action's, with its hash":    {ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: approve},
		"an action's, with a plan hash": {ApprovalId: a.Approval.ApprovalId, PlanHash: a.ActionHash, Decision: approve},
	} {
		_, err := e.plane.Decide(context.Background(), stranger, req)
		if !errs.Is(err, errs.NotFound) || strings.Contains(err.Error(), "version") || strings.Contains(err.Error(), wire) {
			t.Errorf("%s: Decide = %v, want not found, telling nothing", name, err)
		}
	}
}

// TestCallsBeforeThePlanCount: the default plan rule weighs the task's
// irreversible calls outside the plan too, so that a plan cannot stay
// under the threshold by leaving out, or revising away, calls already
// under way.
func TestCallsBeforeThePlanCount(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	// The agent's own two wires, each awaiting its approval: under way.
	for _, id := range []string{"own-1", "own-2"} {
		e.waitStatus("p", e.propose(t, "p", id, "wire"), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	}
	hash := e.submitPlan(t, "p", 1, "wire", "wire")
	tk := e.judged("p", hash, anyJudgement)
	want := "the plan may make 2 irreversible calls and the task has made or has under way 2 outside it: 4, more than 3"
	if got := strings.Join(tk.Plan.Snapshot.Reasons, ";"); tk.Plan.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL || got != want {
		t.Fatalf("plan %s because %q; want it to await approval because %q", standing(tk), got, want)
	}
}

// TestAWithdrawnStepsActionGetsNoNewPermit: an action a revision withdrew
// after it was permitted runs on its permit, but governance gives it no
// other: the execution plane's retry of it, which asks for a new permit,
// is denied, saying why.
func TestAWithdrawnStepsActionGetsNoNewPermit(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	e.credentialed("p")
	e.judged("p", e.submitPlan(t, "p", 1, "search", "search"), anyJudgement)
	id := e.proposeWith(t, "p", "plan-s1-1-h", "search", "", "agent", map[string]any{"n": 1}, nil,
		func(a *stewardv1.Action) { a.PlanStepId = "s1" })
	a := e.waitStatus("p", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.judged("p", e.submitPlan(t, "p", 2, "search"), anyJudgement) // s1 withdrawn while its action runs
	first := a.Permit.PermitId
	e.used(t, "p", id, first, 1)
	a = e.WaitAction("p", id, func(a *stewardv1.Action) bool {
		return a.Status == stewardv1.ActionStatus_ACTION_STATUS_DENIED ||
			(a.Status == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED && a.Permit.GetPermitId() != first)
	})
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_DENIED || !strings.Contains(a.Outcome.GetReason(), "withdr") {
		t.Fatalf("the retry of a withdrawn step's permitted action: %v (%q); want it denied, saying its step was withdrawn", a.Status, a.Outcome.GetReason())
	}
}
