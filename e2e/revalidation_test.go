package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// The revalidation table: before any later use of a permit — after a
// resume, for a retry, for the re-dispatch after "not accepted", past its
// expiry — governance decides again under what is in force now. Each row
// brings one action per column to just before its trigger; then each
// column changes the world for its action (policy now denies it, policy
// now wants other roles, its task's credential is revoked, its task's
// budget is spent), and the trigger fires. Every cell must show a new
// policy snapshot after the revalidation and no dispatch under the old
// permit; the action is denied, or waits for the new roles.
//
// The cells run one after another: a call held at its tool holds its
// reaction lane (one of eight) in the execution plane, so several held at
// once could hold up the others' permits. The policy columns add a rule
// for their own action's target, and wait for the reload, while it waits
// for its trigger.
//
// A spent budget suspends a running task, and a suspended task dispatches
// nothing; so the budget column spends it while the task is paused (a
// paused task is not suspended) and resumes it after the trigger, which
// is when the revalidation meets the spent budget. Its reason is still
// the row's.

const revalBudget = 1000

// revalTable is the table's binary, with a tool per cell, and what the
// policy columns have changed so far.
type revalTable struct {
	*harness
	probeTask string // a task that runs probes, to see the policy reload
	probes    int
	// The targets the policy rules now deny, and ask treasury for.
	denyTargets, rolesTargets []string
}

// revalCell is one action of the table.
type revalCell struct {
	row    revalRow
	col    revalCol
	env    *revalTable
	tool   *stewardtest.Tool
	name   string // the tool's, and the task's request id
	taskID string
	action *stewardv1.Action
	// As the trigger finds them.
	oldPermit, oldSnapshot string
	callsBefore            int
	paused                 bool
}

type revalRow struct {
	name   string
	reason stewardv1.RevalidationReason
	// entry is the tool's contract in the tools file, but for its name
	// and URL; script is how the tool answers.
	entry  string
	script []stewardtest.Answer
	// setup brings the cell to just before its trigger.
	setup   func(t *testing.T, c *revalCell)
	trigger func(t *testing.T, c *revalCell)
	// mayHaveWorked: a call made before may have done the work, so a
	// denial leaves the action unknown, to be settled, not denied.
	mayHaveWorked bool
}

type revalCol struct {
	name   string
	change func(t *testing.T, c *revalCell)
	// denied is what the denial's reason says; "" when the action waits
	// for a new approval instead.
	denied string
}

// heldThenOK is a script whose first call is held until the test
// releases it and then answers code without the work; the next works.
func heldThenOK(code int) []stewardtest.Answer {
	return []stewardtest.Answer{{Code: code, Hold: stewardtest.HoldUntilRelease}}
}

const (
	irreversibleEntry = `"effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "timeout": "60s"`
	honouringEntry    = `"effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "timeout": "60s",
	   "idempotency": {"honoursKey": true}, "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.05s", "maxBackoff": "0.1s"}`
)

// revalRules are the policy rules the policy columns add: one denies the
// targets given, the other asks treasury to approve them.
func revalRules(deny, roles []string) string {
	set := func(targets []string) string {
		quoted := []string{`"-"`}
		for _, x := range targets {
			quoted = append(quoted, fmt.Sprintf("%q", x))
		}
		return "{" + strings.Join(quoted, ", ") + "}"
	}
	return fmt.Sprintf(`
deny_reasons contains "frozen for the audit" if input.action.target in %[1]s
approval_reasons contains "treasury signs this now" if input.action.target in %[2]s
required_approver_roles contains "treasury" if input.action.target in %[2]s
`, set(deny), set(roles))
}

func revalColumns() []revalCol {
	return []revalCol{
		{name: "policy now denies", denied: "frozen for the audit",
			change: func(t *testing.T, c *revalCell) {
				c.env.denyTargets = append(c.env.denyTargets, c.target())
				c.env.reloadPolicy(t)
			}},
		{name: "policy now wants other roles",
			change: func(t *testing.T, c *revalCell) {
				c.env.rolesTargets = append(c.env.rolesTargets, c.target())
				c.env.reloadPolicy(t)
			}},
		{name: "credential revoked", denied: "credential revoked: key leaked",
			change: func(t *testing.T, c *revalCell) {
				if _, err := c.env.operator.governance.RevokeCredential(context.Background(), connect.NewRequest(&stewardv1.RevokeCredentialRequest{
					TaskId: c.taskID, Reason: "key leaked"})); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "budget spent", denied: "the task's budget is spent",
			change: func(t *testing.T, c *revalCell) {
				c.pause(t)
				if _, err := c.env.agent.tasks.ReportUsage(context.Background(), connect.NewRequest(&stewardv1.ReportUsageRequest{
					TaskId: c.taskID, CostMicros: 2 * revalBudget, Model: "m", RequestId: "spend-" + c.name})); err != nil {
					t.Fatal(err)
				}
				// The budget guard sees a paused task and leaves it paused;
				// had it not finished by the resume, it would suspend the
				// resumed task, which then revalidates nothing.
				waitServed(t, c.env.agent.clients, c.taskID, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
					return len(tk.BudgetUsed.GetAlerts()) == 3, fmt.Sprintf("budget alerts %v", tk.BudgetUsed.GetAlerts())
				})
				c.env.governanceIdle(t)
			}},
	}
}

// Rows' steps.

// target is the cell's action's target, which the policy rules match.
func (c *revalCell) target() string { return "acct:" + c.name }

func (c *revalCell) propose(t *testing.T) {
	params, _ := structpb.NewStruct(map[string]any{"amount": 5})
	resp, err := c.env.agent.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: c.taskID, ProposalId: "p-" + c.name, Tool: c.name, Target: c.target(), Params: params, Rationale: argued}))
	if err != nil {
		t.Fatalf("%s: propose: %v", c.name, err)
	}
	c.action = resp.Msg.Action
}

func (c *revalCell) wait(t *testing.T, want stewardv1.ActionStatus) *stewardv1.Action {
	t.Helper()
	_, a := waitAction(t, c.env.agent.clients, c.taskID, c.action.ActionId, want)
	return a
}

func (c *revalCell) approve(t *testing.T) {
	t.Helper()
	a := c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, err := c.env.approver.governance.DecideApproval(context.Background(), connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE})); err != nil {
		t.Fatal(err)
	}
}

func (c *revalCell) pause(t *testing.T) {
	t.Helper()
	if c.paused {
		return
	}
	if _, err := c.env.agent.tasks.PauseTask(context.Background(), connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: c.taskID, Reason: "hold on"})); err != nil {
		t.Fatalf("%s: pause: %v", c.name, err)
	}
	c.paused = true
}

func (c *revalCell) resume(t *testing.T) {
	t.Helper()
	if _, err := c.env.agent.tasks.ResumeTask(context.Background(), connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: c.taskID, Reason: "go on"})); err != nil {
		t.Fatalf("%s: resume: %v", c.name, err)
	}
	c.paused = false
}

// permittedWhilePaused: approved while its task is paused, the action
// holds a permit nobody claims until the resume.
func permittedWhilePaused(t *testing.T, c *revalCell) {
	c.propose(t)
	c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	c.pause(t)
	c.approve(t)
	a := c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	c.oldPermit, c.oldSnapshot = a.Permit.PermitId, a.Snapshot.SnapshotId
}

// dispatchedAndHeld: the first call is out, and the tool holds it.
func dispatchedAndHeld(t *testing.T, c *revalCell) {
	a := c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED)
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) { return c.tool.Calls() == 1, c.name + ": no first call" })
	c.oldPermit, c.oldSnapshot, c.callsBefore = a.Permit.PermitId, a.Snapshot.SnapshotId, 1
}

func revalRows() []revalRow {
	return []revalRow{
		{
			name: "resume", reason: stewardv1.RevalidationReason_REVALIDATION_REASON_RESUME,
			entry:   irreversibleEntry,
			setup:   permittedWhilePaused,
			trigger: func(t *testing.T, c *revalCell) { c.resume(t) },
		},
		{
			name: "retry wait", reason: stewardv1.RevalidationReason_REVALIDATION_REASON_RETRY, mayHaveWorked: true,
			entry: honouringEntry, script: heldThenOK(http.StatusServiceUnavailable),
			setup: func(t *testing.T, c *revalCell) {
				c.propose(t)
				dispatchedAndHeld(t, c)
			},
			trigger: func(t *testing.T, c *revalCell) {
				// The 503 comes back; the retry's backoff is short.
				c.tool.Release()
				if c.paused {
					c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_WAITING)
					c.resume(t)
				}
			},
		},
		{
			name: "not_accepted re-dispatch", reason: stewardv1.RevalidationReason_REVALIDATION_REASON_NOT_ACCEPTED,
			entry: irreversibleEntry, script: heldThenOK(http.StatusInternalServerError),
			setup: func(t *testing.T, c *revalCell) {
				c.propose(t)
				c.approve(t)
				dispatchedAndHeld(t, c)
			},
			trigger: func(t *testing.T, c *revalCell) {
				// The 500 may have done the work: unknown, until a person
				// finds the tool has no record of it.
				c.tool.Release()
				c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
				if _, err := c.env.ops.SettleAction(context.Background(), connect.NewRequest(&stewardv1.SettleActionRequest{
					TaskId: c.taskID, ActionId: c.action.ActionId, State: stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED,
					Reason: "the bank has no record of the transfer"})); err != nil {
					t.Fatal(err)
				}
				if c.paused {
					c.resume(t)
				}
			},
		},
	}
}

// expiredRow runs in a binary whose permits last a second: approved while
// its task is paused, the permit is past its expiry when the task resumes.
func expiredRow() revalRow {
	return revalRow{
		name: "expired permit", reason: stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED,
		entry: irreversibleEntry,
		setup: permittedWhilePaused,
		trigger: func(t *testing.T, c *revalCell) {
			a := c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
			waitPast(t, a.Permit.ExpiresAt.AsTime())
			c.resume(t)
		},
	}
}

func TestRevalidationTable(t *testing.T) {
	t.Run("resume, retry, not_accepted", func(t *testing.T) { runRevalidationTable(t, revalRows(), nil) })
	t.Run("expired permit", func(t *testing.T) {
		runRevalidationTable(t, []revalRow{expiredRow()}, []string{"--permit-ttl", "1s"})
	})
}

// runRevalidationTable runs rows × columns in one binary, one cell after
// another (set up, changed, triggered), then checks every cell.
func runRevalidationTable(t *testing.T, rows []revalRow, flags []string) {
	cols := revalColumns()
	var cells []*revalCell
	for _, r := range rows {
		for _, c := range cols {
			cells = append(cells, &revalCell{row: r, col: c, name: strings.NewReplacer(" ", "-", "_", "-").Replace(r.name + "-" + c.name)})
		}
	}
	startRevalEnv(t, cells, flags)
	for _, c := range cells {
		c.row.setup(t, c)
		c.col.change(t, c)
		c.row.trigger(t, c)
	}
	for _, c := range cells {
		t.Run(c.row.name+"/"+c.col.name, func(t *testing.T) { c.check(t) })
	}
}

// check asserts the cell's outcome: the revalidation of the old permit,
// for the row's reason; a new snapshot after it; no dispatch (nor claim)
// under the old permit, and no call, after it; the action denied (unknown
// when a call made may have done the work), or waiting for the new roles.
func (c *revalCell) check(t *testing.T) {
	var a *stewardv1.Action
	if c.col.denied != "" {
		stopped := stewardv1.ActionStatus_ACTION_STATUS_DENIED
		if c.row.mayHaveWorked {
			stopped = stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN
		}
		a = c.wait(t, stopped)
		if !strings.Contains(a.Outcome.GetReason(), c.col.denied) {
			t.Errorf("denied because %q; want %q", a.Outcome.GetReason(), c.col.denied)
		}
	} else {
		a = c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
		if roles := strings.Join(a.Approval.RequiredRoles, ","); !strings.Contains(roles, "treasury") {
			t.Errorf("the new approval asks %s; want treasury", roles)
		}
	}
	history := replayTask(t, c.env.agent.clients, c.taskID)
	var revalidatedAt uint64
	for _, r := range history {
		if rv := r.Event.GetActionRevalidating(); rv != nil && rv.ActionId == a.ActionId {
			if rv.PermitId != c.oldPermit || rv.Reason != c.row.reason {
				t.Errorf("revalidation of permit %s for %s; want %s for %s", rv.PermitId, rv.Reason, c.oldPermit, c.row.reason)
			}
			revalidatedAt = r.Sequence
		}
	}
	if revalidatedAt == 0 {
		t.Fatalf("no revalidation on the ledger")
	}
	snapshots := 0
	for _, r := range history {
		switch {
		case r.Sequence <= revalidatedAt:
		case r.Event.GetPolicyEvaluated().GetActionId() == a.ActionId,
			r.Event.GetActionPermitted().GetSnapshot() != nil && r.Event.GetActionPermitted().GetPermit().GetActionId() == a.ActionId:
			snapshots++
		case r.Event.GetActionDispatched().GetActionId() == a.ActionId:
			t.Errorf("a dispatch after the revalidation, under permit %q", r.Event.GetActionDispatched().PermitId)
		case claimedPermit(r.Event, c.oldPermit):
			t.Errorf("the old permit was claimed after the revalidation")
		}
	}
	if snapshots == 0 {
		t.Errorf("no new policy snapshot after the revalidation")
	}
	if a.Snapshot.GetSnapshotId() == c.oldSnapshot {
		t.Errorf("the action still points at snapshot %s, the one before the trigger", c.oldSnapshot)
	}
	if calls := c.tool.Calls(); calls != c.callsBefore {
		t.Errorf("the tool got %d calls; want the %d before the trigger", calls, c.callsBefore)
	}
	if c.col.denied == "" {
		c.approvedByTreasury(t, a)
	}
}

// approvedByTreasury approves the new approval as someone who holds only
// the new role: the action goes on under a new permit, with one more call
// and the same op_key.
func (c *revalCell) approvedByTreasury(t *testing.T, a *stewardv1.Action) {
	t.Helper()
	if _, err := c.env.treasurer.governance.DecideApproval(context.Background(), connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE})); err != nil {
		t.Fatal(err)
	}
	done := c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	keys := callKeys(c.tool, "/call")
	calls := len(keys)
	if calls != c.callsBefore+1 || keys[len(keys)-1] != done.OpKey || done.Permit.PermitId == c.oldPermit {
		t.Errorf("after the approval: %d calls (last key %s), permit %s; want %d, op_key %s, a new permit", calls, keys[len(keys)-1], done.Permit.PermitId, c.callsBefore+1, done.OpKey)
	}
}

// startRevalEnv starts a binary with a tool for every cell (and a probe,
// to see the policy reload), and a task for every cell.
func startRevalEnv(t *testing.T, cells []*revalCell, flags []string) *revalTable {
	t.Helper()
	probe := stewardtest.StartTool(t)
	entries := []string{fmt.Sprintf(`{"name": "probe", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "http": {"url": %q}}`, probe.URL+"/call")}
	for _, c := range cells {
		c.tool = stewardtest.StartTool(t).IgnoreKeys().Script("/call", c.row.script...)
		entries = append(entries, fmt.Sprintf(`{"name": %q, "version": "1", %s, "http": {"url": %q}}`, c.name, c.row.entry, c.tool.URL+"/call"))
	}
	env := &revalTable{harness: startSteward(t, setup{tools: entries, policy: true, flags: flags})}
	env.probeTask = env.task(t, "probe", "probe")
	for _, c := range cells {
		c.env = env
		c.taskID = env.task(t, c.name, c.name)
	}
	return env
}

func (env *revalTable) task(t *testing.T, requestID, tool string) string {
	t.Helper()
	k := contract()
	// No authorizerRef: a cell's new approval is given by treasury alone,
	// and a named authorizer would have to be among its approvers.
	k.AllowedTools = []string{tool}
	k.Budget = &stewardv1.Budget{MaxTokens: 50_000, MaxCostMicros: revalBudget, Currency: "USD"}
	return env.create(t, requestID, k)
}

// probeOnce runs a read and returns the bundle revision its snapshot
// was taken under.
func (env *revalTable) probeOnce(t *testing.T) string {
	t.Helper()
	env.probes++
	resp, err := env.agent.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: env.probeTask, ProposalId: fmt.Sprintf("probe-%d", env.probes), Tool: "probe", Target: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	_, a := waitAction(t, env.agent.clients, env.probeTask, resp.Msg.Action.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	return a.Snapshot.GetBundleRevision()
}

// reloadPolicy writes the default bundle with the policy columns' rules
// for the targets listed now, and waits until governance decides under
// it.
func (env *revalTable) reloadPolicy(t *testing.T) {
	t.Helper()
	env.harness.reloadPolicy(t, revalRules(env.denyTargets, env.rolesTargets), func() string { return env.probeOnce(t) })
}

// governanceIdle waits until the governance plane has handled every event
// on the log: none pending, none unacknowledged.
func (env *revalTable) governanceIdle(t *testing.T) {
	t.Helper()
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		m := scrape(t, env.url)
		pending, ok := m[`steward_consumer_pending{consumer="governance",stream="STEWARD_EVENTS"}`]
		acks := m[`steward_consumer_ack_pending{consumer="governance",stream="STEWARD_EVENTS"}`]
		return ok && pending == 0 && acks == 0, fmt.Sprintf("the governance plane has %v events pending, %v unacknowledged", pending, acks)
	})
}

// TestExpiredPermitIsNeverClaimed: a permit past its expiry (--permit-ttl
// 1s; the action was approved while its task was paused, and the task
// resumed after the second) is not claimed. Governance takes a new
// snapshot, under which the approval already given still counts, and
// issues a new permit; the action is dispatched once, under it.
func TestExpiredPermitIsNeverClaimed(t *testing.T) {
	c := &revalCell{row: expiredRow(), col: revalCol{name: "nothing changed", change: func(*testing.T, *revalCell) {}}, name: "expiring"}
	startRevalEnv(t, []*revalCell{c}, []string{"--permit-ttl", "1s"})
	c.row.setup(t, c)
	c.row.trigger(t, c)
	done := c.wait(t, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	var revalidatedAt uint64
	var snapshots, permits, dispatches int
	for _, r := range replayTask(t, c.env.agent.clients, c.taskID) {
		switch ev := r.Event; {
		case claimedPermit(ev, c.oldPermit):
			t.Errorf("the expired permit %s was claimed", c.oldPermit)
		case ev.GetActionRevalidating() != nil:
			if rv := ev.GetActionRevalidating(); rv.PermitId != c.oldPermit || rv.Reason != stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED {
				t.Errorf("revalidation %v; want permit %s, expired", rv, c.oldPermit)
			}
			revalidatedAt = r.Sequence
		case revalidatedAt == 0:
		case ev.GetPolicyEvaluated() != nil:
			snapshots++
		case ev.GetActionPermitted() != nil:
			permits++
			if ev.GetActionPermitted().GetSnapshot() != nil {
				snapshots++ // recorded with the permit
			}
		}
		if d := r.Event.GetActionDispatched(); d != nil {
			dispatches++
			if d.PermitId != done.Permit.PermitId {
				t.Errorf("a dispatch under permit %s; want the new one, %s", d.PermitId, done.Permit.PermitId)
			}
		}
	}
	if revalidatedAt == 0 || snapshots != 1 || permits != 1 || done.Permit.PermitId == c.oldPermit {
		t.Fatalf("revalidated at %d, then %d snapshots and %d permits (now %s, was %s); want a revalidation, then one of each, a new permit",
			revalidatedAt, snapshots, permits, done.Permit.PermitId, c.oldPermit)
	}
	if calls, work := c.tool.Calls(), c.tool.Executions(done.OpKey); dispatches != 1 || calls != 1 || work != 1 {
		t.Fatalf("%d dispatches, %d calls, work done %d times; want one of each", dispatches, calls, work)
	}
}
