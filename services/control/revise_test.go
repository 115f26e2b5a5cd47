package control_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

// revisedCriteria is the criterion a revision in these tests puts in
// place of the task's.
func revisedCriteria() []*stewardv1.AcceptanceCriterion {
	return []*stewardv1.AcceptanceCriterion{{Id: "two-artifacts", Expression: "size(artifacts) >= 2"}}
}

// judge records governance's evaluation of tk's open revision, as the
// revision policy would decide it.
func (r *harness) judge(t *testing.T, tk *stewardv1.Task, decision stewardv1.PolicyDecision, roles ...string) *stewardv1.Task {
	t.Helper()
	open := task.OpenRevision(tk)
	if open == nil {
		t.Fatal("no open revision to judge")
	}
	return r.Append(tk.Contract.TaskId, &stewardv1.ContractRevisionEvaluated{RevisionId: open.RevisionId, ContractHash: open.ContractHash,
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "rsnap", Decision: decision, RequiredApproverRoles: roles, Reasons: []string{"judged here"}}})
}

// TestReviseContractMidTask: a contract revised mid-task keeps the actions
// proposed before it takes effect under version 1 — those proposed while
// it waited for approval too, when the old criteria still judge — and
// those after under version 2; another party's decision is refused; the
// owner's approval, once policy allows, makes version 2, bound to the hash
// of the whole revised contract.
func TestReviseContractMidTask(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "rev-mid", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	before := r.propose(t, id, "p-before", "search", "index", nil)

	tk, rev, err := r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, RequestId: "rev-1", Reason: "the scope grew",
		Contract: &stewardv1.TaskContract{Intent: "i, and more", AcceptanceCriteria: revisedCriteria()}})
	if err != nil {
		t.Fatal(err)
	}
	if rev.GetState() != stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_OPEN || rev.Version != 2 || !slices.Equal(rev.Changed, []string{"intent", "acceptance_criteria"}) {
		t.Fatalf("revision = %v, want open version 2 changing intent and acceptance_criteria", rev)
	}
	if again, _, err := r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, RequestId: "rev-1", Reason: "the scope grew",
		Contract: &stewardv1.TaskContract{Intent: "i, and more", AcceptanceCriteria: revisedCriteria()}}); err != nil || len(again.ContractRevisions) != 1 {
		t.Fatalf("a retry of the proposal: %v, %d revisions; want the one", err, len(again.ContractRevisions))
	}
	during := r.propose(t, id, "p-during", "search", "more", nil)
	if tk = r.task(t, id); task.ContractVersion(tk) != 1 || tk.Contract.Intent != "i" || len(tk.Contract.AcceptanceCriteria) != 0 {
		t.Fatalf("before approval: version %d, intent %q, %d criteria; want version 1's", tk.ContractVersion, tk.Contract.Intent, len(tk.Contract.AcceptanceCriteria))
	}

	tk = r.judge(t, tk, stewardv1.PolicyDecision_POLICY_DECISION_ALLOW)
	if task.ContractVersion(tk) != 1 {
		t.Fatalf("policy's allow alone made version %d; the owner has not approved", tk.ContractVersion)
	}
	decide := func(who rpc.Identity, approve bool) error {
		_, _, err := r.ctl.DecideContractRevision(ctx, who, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rev.RevisionId, Approve: approve, Comment: "ok"})
		return err
	}
	if err := decide(rpc.Identity{Principal: "user:stranger", Roles: []string{"authorizer"}}, true); !errs.Is(err, errs.PermissionDenied) {
		t.Fatalf("a stranger's approval: %v, want PermissionDenied", err)
	}
	if err := decide(rpc.Identity{Principal: "user:a"}, true); err != nil {
		t.Fatal(err)
	}
	after := r.propose(t, id, "p-after", "search", "last", nil)

	tk = r.task(t, id)
	wantHash, _ := task.ContractHash(rev.Contract)
	if tk.ContractVersion != 2 || tk.ContractHash != wantHash || tk.Contract.Intent != "i, and more" || len(tk.Contract.AcceptanceCriteria) != 1 {
		t.Fatalf("after approval: version %d hash %s intent %q; want version 2 bound to %s", tk.ContractVersion, tk.ContractHash, tk.Contract.Intent, wantHash)
	}
	if n := len(tk.ContractVersions); n != 2 || tk.ContractVersions[1].Reason != "the scope grew" || !slices.Equal(tk.ContractVersions[1].ApprovedBy, []string{"user:a"}) {
		t.Fatalf("versions = %v, want 1 and 2, approved by user:a", tk.ContractVersions)
	}
	for _, c := range []struct {
		a    *stewardv1.Action
		want uint32
	}{{before, 1}, {during, 1}, {after, 2}} {
		if got := task.VersionOf(task.FindAction(tk, c.a.ActionId).ContractVersion); got != c.want {
			t.Errorf("action %s is under contract version %d, want %d", c.a.ProposalId, got, c.want)
		}
	}
}

// TestReviseContractRefusals: what a revision may not be, each refused
// naming the field, and nothing recorded.
func TestReviseContractRefusals(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "rev-refuse", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	ended := r.runningTask(t, "rev-ended", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	if _, err := r.ctl.CancelTask(ctx, "t", &stewardv1.CancelTaskRequest{TaskId: ended, Reason: "done with it"}); err != nil {
		t.Fatal(err)
	}
	intent := &stewardv1.TaskContract{Intent: "new"}
	cases := []struct {
		name  string
		req   *stewardv1.ReviseContractRequest
		code  errs.Code
		field string
	}{
		{"unrevisable field", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r", Contract: &stewardv1.TaskContract{RiskTier: stewardv1.RiskTier_RISK_TIER_LOW}}, errs.Invalid, "contract.risk_tier"},
		{"a budget's total", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r", Contract: &stewardv1.TaskContract{Budget: &stewardv1.Budget{MaxTokens: 9}}}, errs.Invalid, "contract.budget.max_tokens"},
		{"bad criterion", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r", Contract: &stewardv1.TaskContract{AcceptanceCriteria: []*stewardv1.AcceptanceCriterion{{Id: "c", Expression: "size(artifacts) +"}}}}, errs.Invalid, "contract.acceptance_criteria[0].expression"},
		{"no reason", &stewardv1.ReviseContractRequest{TaskId: id, Contract: intent}, errs.Invalid, "reason"},
		{"a milestone twice", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r", Contract: &stewardv1.TaskContract{Budget: &stewardv1.Budget{
			Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "m1"}, {MilestoneId: "m1"}}}}}, errs.Invalid, "contract.budget.milestones[1].milestone_id"},
		{"no contract", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r"}, errs.Invalid, "contract"},
		{"no change", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r", Contract: &stewardv1.TaskContract{Intent: "i"}}, errs.Invalid, "contract"},
		{"ended task", &stewardv1.ReviseContractRequest{TaskId: ended, Reason: "r", Contract: intent}, errs.FailedPrecondition, "task_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := r.ctl.ReviseContract(ctx, "t", c.req)
			var e *errs.Error
			if !errs.Is(err, c.code) || !errors.As(err, &e) || e.Field != c.field {
				t.Fatalf("err = %v, want %v naming %q", err, c.code, c.field)
			}
		})
	}
	if n := r.counts(t, id)[event.TypeContractRevisionProposed]; n != 0 {
		t.Fatalf("refusals recorded %d revisions", n)
	}
	if _, _, err := r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r", Contract: intent}); err != nil {
		t.Fatal(err)
	}
	_, _, err := r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r2", Contract: &stewardv1.TaskContract{Intent: "newer"}})
	var e *errs.Error
	if !errs.Is(err, errs.FailedPrecondition) || !errors.As(err, &e) || e.Field != "task_id" {
		t.Fatalf("a second open revision: %v, want FailedPrecondition naming task_id", err)
	}
}

// TestReviseContractHighRiskNeedsTheRole: where policy asks for a role's
// approval, the owner's is not enough; the proposer may not give the
// role's, even holding it; another holder's makes the version.
func TestReviseContractHighRiskNeedsTheRole(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "rev-high", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	tk, rev, err := r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "the outcome moved",
		Contract: &stewardv1.TaskContract{DesiredOutcome: "o, in French"}})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(who rpc.Identity) error {
		_, _, err := r.ctl.DecideContractRevision(ctx, who, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rev.RevisionId, Approve: true})
		return err
	}
	if err := decide(rpc.Identity{Principal: "user:boss", Roles: []string{"authorizer"}}); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a role's approval before policy judged: %v, want FailedPrecondition", err)
	}
	tk = r.judge(t, tk, stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL, "authorizer")
	if err := decide(rpc.Identity{Principal: "user:a"}); err != nil {
		t.Fatal(err)
	}
	if tk = r.task(t, id); task.ContractVersion(tk) != 1 || task.OpenRevision(tk) == nil {
		t.Fatalf("the owner's approval alone made version %d; policy asks for an authorizer", tk.ContractVersion)
	}
	if err := decide(rpc.Identity{Principal: "t", Roles: []string{"authorizer"}}); !errs.Is(err, errs.PermissionDenied) {
		t.Fatalf("the proposer's role approval: %v, want PermissionDenied", err)
	}
	if err := decide(rpc.Identity{Principal: "user:nobody"}); !errs.Is(err, errs.PermissionDenied) {
		t.Fatalf("an approval without the role: %v, want PermissionDenied", err)
	}
	if err := decide(rpc.Identity{Principal: "user:boss", Roles: []string{"authorizer"}}); err != nil {
		t.Fatal(err)
	}
	tk = r.task(t, id)
	if tk.ContractVersion != 2 || !slices.Equal(tk.ContractVersions[1].ApprovedBy, []string{"user:a", "user:boss"}) {
		t.Fatalf("version %d approved by %v, want 2 by user:a and user:boss", tk.ContractVersion, tk.ContractVersions[len(tk.ContractVersions)-1].ApprovedBy)
	}
}

// TestReviseContractRejected: a rejection, or policy's deny, closes the
// revision and leaves the version in force; a new one may follow.
func TestReviseContractRejected(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "rev-reject", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	revise := func() *stewardv1.ContractRevision {
		_, rev, err := r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r", Contract: &stewardv1.TaskContract{Intent: "other"}})
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	rev := revise()
	if _, _, err := r.ctl.DecideContractRevision(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rev.RevisionId}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("a rejection without a comment: %v, want InvalidArgument", err)
	}
	_, _, err := r.ctl.DecideContractRevision(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: "rev-other", Comment: "no"})
	var e *errs.Error
	if !errs.Is(err, errs.FailedPrecondition) || !errors.As(err, &e) || e.Field != "revision_id" {
		t.Fatalf("a decision on another revision: %v, want FailedPrecondition naming revision_id", err)
	}
	for range 2 { // a retry of the rejection records nothing more
		if _, _, err := r.ctl.DecideContractRevision(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rev.RevisionId, Comment: "no", RequestId: "no-1"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.counts(t, id)[event.TypeContractRevisionDecided]; n != 1 {
		t.Fatalf("%d decisions recorded, want 1", n)
	}
	revise()
	tk := r.judge(t, r.task(t, id), stewardv1.PolicyDecision_POLICY_DECISION_DENY)
	// The owner's own proposal, approved by that act, may still be withdrawn.
	_, own, err := r.ctl.ReviseContract(ctx, "user:a", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "mine", Contract: &stewardv1.TaskContract{Intent: "the owner's"}})
	if err != nil || own.OwnerApprovedBy != "user:a" {
		t.Fatalf("the owner's proposal: %v, %v; want it approved by that act", own, err)
	}
	if _, _, err := r.ctl.DecideContractRevision(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: own.RevisionId, Comment: "not now"}); err != nil {
		t.Fatalf("the owner withdrawing their own proposal: %v", err)
	}
	tk = r.task(t, id)
	if task.ContractVersion(tk) != 1 || task.OpenRevision(tk) != nil || len(tk.ContractRevisions) != 3 {
		t.Fatalf("after a rejection and a deny: version %d, %d revisions, open %v", tk.ContractVersion, len(tk.ContractRevisions), task.OpenRevision(tk))
	}
	for _, rv := range tk.ContractRevisions {
		if rv.State != stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_REJECTED || rv.ClosedReason == "" {
			t.Errorf("revision %s is %v, want rejected", rv.RevisionId, rv.State)
		}
	}
}

// TestReviseContractRefusesEveryOtherField: each contract field but the
// revisable ones, and each budget field but milestones, set alone in a
// revision is refused naming it; what the fold would take from it is
// never reached.
func TestReviseContractRefusesEveryOtherField(t *testing.T) {
	r := idleHarness(t)
	id := r.deadlineTask(t, "rev-fields", false)
	revisable := map[string]bool{"intent": true, "desired_outcome": true, "acceptance_criteria": true, "budget": true, "milestones": true}
	try := func(c *stewardv1.TaskContract, want string) {
		t.Helper()
		_, _, err := r.ctl.ReviseContract(context.Background(), "t", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r", Contract: c})
		var e *errs.Error
		if !errs.Is(err, errs.Invalid) || !errors.As(err, &e) || e.Field != want {
			t.Errorf("setting %s: %v, want InvalidArgument naming it", want, err)
		}
	}
	fields := (&stewardv1.TaskContract{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		if f := fields.Get(i); !revisable[string(f.Name())] {
			c := &stewardv1.TaskContract{}
			setAny(c.ProtoReflect(), f)
			try(c, "contract."+string(f.Name()))
		}
	}
	bf := (&stewardv1.Budget{}).ProtoReflect().Descriptor().Fields()
	for i := range bf.Len() {
		if f := bf.Get(i); f.Name() != "milestones" {
			b := &stewardv1.Budget{}
			setAny(b.ProtoReflect(), f)
			try(&stewardv1.TaskContract{Budget: b}, "contract.budget."+string(f.Name()))
		}
	}
	if n := r.counts(t, id)[event.TypeContractRevisionProposed]; n != 0 {
		t.Fatalf("refusals recorded %d revisions", n)
	}
}

// setAny sets field f of m to some value that is not its zero.
func setAny(m protoreflect.Message, f protoreflect.FieldDescriptor) {
	switch {
	case f.IsList():
		l := m.Mutable(f).List()
		if f.Kind() == protoreflect.MessageKind {
			l.Append(l.NewElement())
		} else {
			l.Append(protoreflect.ValueOfString("x"))
		}
	case f.Kind() == protoreflect.MessageKind:
		m.Mutable(f)
	case f.Kind() == protoreflect.StringKind:
		m.Set(f, protoreflect.ValueOfString("x"))
	case f.Kind() == protoreflect.BoolKind:
		m.Set(f, protoreflect.ValueOfBool(true))
	case f.Kind() == protoreflect.EnumKind:
		m.Set(f, protoreflect.ValueOfEnum(1))
	case f.Kind() == protoreflect.Int64Kind:
		m.Set(f, protoreflect.ValueOfInt64(1))
	default:
		m.Set(f, protoreflect.ValueOfUint32(1))
	}
}

// TestRevisedCriteriaJudgeOnceApproved: until a revision takes effect the
// old criteria judge a produced result; after, the revised ones do.
func TestRevisedCriteriaJudgeOnceApproved(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	req := validRequest("rev-criteria")
	req.Contract.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "old", Expression: "size(artifacts) >= 1"}}
	tk, _, err := r.ctl.CreateTask(ctx, "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.running(id)
	_, rev, err := r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "no artifact is needed after all",
		Contract: &stewardv1.TaskContract{AcceptanceCriteria: []*stewardv1.AcceptanceCriterion{{Id: "new", Expression: "size(artifacts) == 0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	produce := func(requestID string) *stewardv1.AcceptanceRound {
		_, round, err := r.ctl.MarkProduced(ctx, "t", &stewardv1.MarkProducedRequest{TaskId: id, RequestId: requestID})
		if err != nil {
			t.Fatal(err)
		}
		return round
	}
	if round := produce("m1"); len(round.Checks) != 1 || round.Checks[0].CriterionId != "old" || round.Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED {
		t.Fatalf("before approval: %v, want the old criterion to fail it", round)
	}
	r.judge(t, r.task(t, id), stewardv1.PolicyDecision_POLICY_DECISION_ALLOW)
	if _, _, err := r.ctl.DecideContractRevision(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rev.RevisionId, Approve: true}); err != nil {
		t.Fatal(err)
	}
	if round := produce("m2"); len(round.Checks) != 1 || round.Checks[0].CriterionId != "new" || !round.Checks[0].Passed {
		t.Fatalf("after approval: %v, want the revised criterion to pass it", round)
	}
}

// TestCriteriaStaleOnceARevisionTakesEffect: MarkProduced evaluates the
// criteria, then writes the checks only if what they read is unchanged. A
// revision that takes effect in between — here one that keeps a
// criterion's id and changes its expression, which the fold cannot tell —
// must make the checks stale, or a result is judged by the old version's
// criteria after the new one is in force.
func TestCriteriaStaleOnceARevisionTakesEffect(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	req := validRequest("rev-stale")
	req.Contract.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "done", Expression: "size(artifacts) >= 0"}}
	tk, _, err := r.ctl.CreateTask(ctx, "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.running(id)
	_, rev, err := r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "one artifact at least",
		Contract: &stewardv1.TaskContract{AcceptanceCriteria: []*stewardv1.AcceptanceCriterion{{Id: "done", Expression: "size(artifacts) >= 1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	before := control.CriteriaInputs(r.judge(t, r.task(t, id), stewardv1.PolicyDecision_POLICY_DECISION_ALLOW))
	if _, _, err := r.ctl.DecideContractRevision(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rev.RevisionId, Approve: true}); err != nil {
		t.Fatal(err)
	}
	if after := control.CriteriaInputs(r.task(t, id)); after == before {
		t.Fatalf("criteria inputs %q did not change when version 2 took effect: checks of version 1's criteria would be written", after)
	}
}

// TestReviseContractBounded: every proposal stays on the task with its
// whole contract, whatever became of it, so a party proposing and
// withdrawing in a loop would grow the task without end. Past
// task.MaxContractRevisions a proposal is refused naming task_id.
func TestReviseContractBounded(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "rev-bounded", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	revise := func() (*stewardv1.ContractRevision, error) {
		_, rev, err := r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, Reason: "r", Contract: &stewardv1.TaskContract{Intent: "other"}})
		return rev, err
	}
	for range task.MaxContractRevisions {
		rev, err := revise()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.ctl.DecideContractRevision(ctx, rpc.Identity{Principal: "t"}, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rev.RevisionId, Comment: "withdrawn"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := revise()
	var e *errs.Error
	if !errs.Is(err, errs.TooLarge) || !errors.As(err, &e) || e.Field != "task_id" {
		t.Fatalf("revision %d: %v, want TooLarge naming task_id", task.MaxContractRevisions+1, err)
	}
	if n := len(r.task(t, id).ContractRevisions); n != task.MaxContractRevisions {
		t.Fatalf("%d revisions recorded, want %d", n, task.MaxContractRevisions)
	}
}
