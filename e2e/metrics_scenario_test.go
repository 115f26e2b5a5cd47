package e2e_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// auditorToken is the token of user:audrey, who holds the auditor role.
const auditorToken = "e2e-auditor-token-0123456789"

// scenarioTools are the tools of the metrics scenario, all served by tool:
// a read; a write policy denies; an irreversible write that needs a
// person; a reversible write and its compensation; and a charge whose
// answer never comes in time and that has no status query.
func scenarioTools(tool *stewardtest.Tool) string {
	entry := func(name, class, path, extra string, cost int) string {
		return fmt.Sprintf(`{"name": %q, "version": "1", "effectClass": %q, "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "costMicrosPerCall": %d, %s
		  "http": {"url": %q}}`, name, class, cost, extra, tool.URL+path)
	}
	return `{"tools": [` + strings.Join([]string{
		entry("search", "EFFECT_CLASS_READ", "/search", "", 100),
		entry("forbidden", "EFFECT_CLASS_IDEMPOTENT_WRITE", "/forbidden", "", 100),
		entry("wire", "EFFECT_CLASS_IRREVERSIBLE", "/wire", "", 5000),
		entry("reserve", "EFFECT_CLASS_REVERSIBLE_WRITE", "/reserve", `"compensatingTool": "release",`, 1000),
		entry("release", "EFFECT_CLASS_IDEMPOTENT_WRITE", "/release", "", 300),
		entry("charge", "EFFECT_CLASS_IDEMPOTENT_WRITE", "/charge", `"timeout": "1s",`, 700),
	}, ",\n") + `]}`
}

// TestMetricsScenario runs the real binary through a fixed scenario that
// has every case the task and action metrics count — an action denied; one
// sent for approval, then approved; a write compensated; a task cancelled;
// one accepted; one produced and waiting for review; an unknown outcome,
// then settled — plus two findings an auditor records, and checks that
// each metric reads what docs/metrics.md says it must. Then it restarts the
// binary, which rebuilds its views from the log, and checks that every
// metric reads the same.
//
// It runs against the binary, not in process, because the restart is part
// of what it checks.
func TestMetricsScenario(t *testing.T) {
	tool := stewardtest.StartTool(t).Always("/charge", stewardtest.Late)
	dir := t.TempDir()
	rego, err := os.ReadFile("../services/governance/policy/default/steward.rego")
	if err != nil {
		t.Fatal(err)
	}
	policy := writeFile(t, filepath.Join(dir, "policy"), "steward.rego", string(rego)+"\ndeny_reasons contains \"forbidden is never allowed\" if input.action.tool == \"forbidden\"\n")
	withAuditor := strings.Replace(tokensFile, "\n]}", `,
  {"token": "`+auditorToken+`", "principal": "user:audrey", "roles": ["auditor"]}
]}`, 1)
	flags := []string{
		"--tools", writeFile(t, dir, "tools.json", scenarioTools(tool)),
		"--auth", writeFile(t, dir, "tokens.json", withAuditor),
		"--policy-dir", filepath.Dir(policy),
	}
	data := filepath.Join(dir, "data")
	p := startBinary(t, data, flags...)
	agent, approver, auditor := withToken(p.url, agentToken), withToken(p.url, approverToken), withToken(p.url, auditorToken)
	ctx := context.Background()

	create := func(requestID string, tools ...string) (string, *stewardv1.TaskContract) {
		t.Helper()
		k := contract()
		k.AllowedTools = tools
		k.Budget = &stewardv1.Budget{MaxTokens: 50_000, MaxCostMicros: 10_000_000, Currency: "EUR"}
		k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "has-notes", Expression: `"notes" in artifacts`}}
		return requestID, k
	}
	start := func(requestID string, k *stewardv1.TaskContract) string {
		t.Helper()
		resp, err := agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
		if err != nil {
			t.Fatalf("create %s: %v", requestID, err)
		}
		id := resp.Msg.Task.Contract.TaskId
		waitStarted(t, agent.clients, id)
		return id
	}
	act := func(taskID, proposalID, toolName string) *stewardv1.Action {
		t.Helper()
		params, _ := structpb.NewStruct(map[string]any{"item": proposalID})
		resp, err := agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
			TaskId: taskID, ProposalId: proposalID, Tool: toolName, Target: "acct:42", Params: params, Rationale: argued,
		}))
		if err != nil {
			t.Fatalf("propose %s: %v", toolName, err)
		}
		return resp.Msg.Action
	}
	produce := func(taskID string) {
		t.Helper()
		if _, err := agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{
			TaskId: taskID, Name: "notes", MediaType: "text/plain", Content: []byte("done"),
		})); err != nil {
			t.Fatal(err)
		}
		if _, err := agent.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: taskID})); err != nil {
			t.Fatal(err)
		}
	}
	spend := func(taskID string, tokens, micros int64) {
		t.Helper()
		if _, err := agent.tasks.ReportUsage(ctx, connect.NewRequest(&stewardv1.ReportUsageRequest{
			TaskId: taskID, Tokens: tokens, CostMicros: micros, RequestId: "usage-" + taskID,
		})); err != nil {
			t.Fatal(err)
		}
	}

	// Unknown, then settled: the charge goes out and no answer comes
	// back. While it is unknown its trace has no outcome.
	unknownTask := start(create("m-unknown", "charge"))
	charge := act(unknownTask, "charge-1", "charge")
	waitAction(t, agent.clients, unknownTask, charge.ActionId, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
	m := scrape(t, p.url)
	for series, want := range map[string]float64{
		`steward_trace_completeness_ratio`:                       0, // one side effect, its outcome unknown
		`steward_recovery_seconds_count{from="unknown_outcome"}`: 0,
		`steward_rollback_ratio`:                                 0, // no write succeeded yet
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("while unknown: %s = %v (present: %v), want %v", series, got, ok, want)
		}
	}
	if _, err := actionClient(p.url, operatorToken).SettleAction(ctx, connect.NewRequest(&stewardv1.SettleActionRequest{
		TaskId: unknownTask, ActionId: charge.ActionId, State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, Reason: "the statement shows one charge",
	})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, agent.clients, unknownTask, stewardv1.TaskStatus_TASK_STATUS_RUNNING)

	// Accepted by its checks, after a read and 2000 micro-euros of model
	// spend.
	acceptedTask := start(create("m-accepted", "search"))
	read := act(acceptedTask, "search-1", "search")
	waitAction(t, agent.clients, acceptedTask, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	spend(acceptedTask, 50, 2000)
	produce(acceptedTask)
	waitStatus(t, agent.clients, acceptedTask, stewardv1.TaskStatus_TASK_STATUS_ACCEPTED)

	// Denied by policy, then cancelled after 500 micro-euros of spend.
	deniedTask := start(create("m-denied", "forbidden"))
	forbidden := act(deniedTask, "forbidden-1", "forbidden")
	waitAction(t, agent.clients, deniedTask, forbidden.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	spend(deniedTask, 10, 500)
	if _, err := agent.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: deniedTask, Reason: "nothing left to do"})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, agent.clients, deniedTask, stewardv1.TaskStatus_TASK_STATUS_CANCELLED)

	// Sent to a person for approval, approved, run; then produced and
	// waiting for its acceptance owner's review.
	id, k := create("m-approved", "wire")
	k.AuthorizerRef, k.AcceptanceOwnerRef = "user:bo", "user:owner"
	approvedTask := start(id, k)
	wire := act(approvedTask, "wire-1", "wire")
	_, waiting := waitAction(t, agent.clients, approvedTask, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, err := approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: waiting.Approval.ApprovalId, ActionHash: wire.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	})); err != nil {
		t.Fatal(err)
	}
	waitAction(t, agent.clients, approvedTask, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	produce(approvedTask)
	waitStatus(t, agent.clients, approvedTask, stewardv1.TaskStatus_TASK_STATUS_PRODUCED)

	// A reservation, undone when the task fails.
	id, k = create("m-compensated", "reserve", "release")
	k.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_COMPENSATE}
	compensatedTask := start(id, k)
	reserve := act(compensatedTask, "reserve-1", "reserve")
	waitAction(t, agent.clients, compensatedTask, reserve.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if _, err := agent.tasks.FailTask(ctx, connect.NewRequest(&stewardv1.FailTaskRequest{TaskId: compensatedTask, Reason: "the order fell through"})); err != nil {
		t.Fatal(err)
	}
	failed := waitStatus(t, agent.clients, compensatedTask, stewardv1.TaskStatus_TASK_STATUS_FAILED)
	if len(failed.Actions) != 2 || failed.Actions[1].Compensates != reserve.ActionId || failed.Actions[1].Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("the reservation was not compensated:\n%s", describeActions(failed))
	}

	// An auditor confirms two violations: the wire, and the cancelled
	// task as a whole, after it ended.
	recordFindings(t, p.url, agent, auditor, approvedTask, wire.ActionId, deniedTask)

	// Every task's spend, failed and cancelled work included.
	var micros, tokens int64
	for _, id := range []string{unknownTask, acceptedTask, deniedTask, approvedTask, compensatedTask} {
		tk := waitServed(t, agent.clients, id, 10*time.Second, func(*stewardv1.Task) (bool, string) { return true, "" })
		micros += tk.BudgetUsed.GetCostMicros()
		tokens += tk.BudgetUsed.GetTokens()
	}
	// 700 charge + 100 search + 2000 reported + 500 reported + 5000 wire
	// + 1000 reserve + 300 release.
	if micros != 9600 || tokens != 60 {
		t.Errorf("the tasks spent %d micro-euros and %d tokens, want 9600 and 60", micros, tokens)
	}
	unknownAt, settledAt := eventTime(t, agent, unknownTask, event.TypeActionOutcome), eventTime(t, agent, unknownTask, event.TypeActionSettled)

	want := map[string]float64{
		// produced (approved) and accepted, of the four whose work is
		// over: accepted, cancelled, produced, failed.
		`steward_task_success_ratio`: 2.0 / 4,
		// forbidden (denied) and wire (sent for approval), of the six
		// evaluated: charge, search, forbidden, wire, reserve, release.
		`steward_policy_block_ratio`: 2.0 / 6,
		// reserve (compensated), of the succeeded writes charge, wire and
		// reserve; release, the compensation, is not counted.
		`steward_rollback_ratio`: 1.0 / 3,
		// charge, wire, reserve and release, each with snapshot, permit,
		// credential, approval where asked and an outcome.
		`steward_trace_completeness_ratio`: 1,
		// everything spent, over the one accepted task.
		`steward_cost_per_accepted_task_micros{currency="EUR"}`:  float64(micros),
		`steward_tokens_per_accepted_task`:                       float64(tokens),
		`steward_confirmed_policy_violations`:                    2,
		`steward_recovery_seconds_count{from="unknown_outcome"}`: 1,
		`steward_recovery_seconds_sum{from="unknown_outcome"}`:   settledAt.Sub(unknownAt).Seconds(),
		`steward_recovery_seconds_count{from="stall"}`:           0,
		`steward_tasks{status="produced"}`:                       1,
		`steward_tasks_broken`:                                   0,
	}
	m = scrape(t, p.url)
	for series, v := range want {
		if got, ok := m[series]; !ok || got != v {
			t.Errorf("%s = %v (present: %v), want %v", series, got, ok, v)
		}
	}

	// Metrics are projections: a restart rebuilds the views from the log
	// and every task and action metric reads the same. Consumer lag, the
	// edge's denied calls and the snapshots' timings are the process's
	// own, not the log's.
	p.stop(t)
	p = startBinary(t, data, flags...)
	again := scrape(t, p.url)
	for series, v := range m {
		if !strings.HasPrefix(series, "steward_") || strings.HasPrefix(series, "steward_consumer_") || strings.HasPrefix(series, "steward_rpc_denied_") || strings.HasPrefix(series, "steward_views_snapshot_") {
			continue
		}
		// A histogram's _sum adds floats in the views' map order, which
		// differs from one scrape to the next in its last bits.
		if got, ok := again[series]; !ok || math.Abs(got-v) > 1e-9*math.Max(1, math.Abs(v)) {
			t.Errorf("after a restart, %s = %v (present: %v), want %v as before", series, got, ok, v)
		}
	}
}

// recordFindings has auditor record a violation about action actionID of
// onAction, and one about the ended task ended as a whole, and checks what
// RecordFinding refuses: a caller without the auditor role, a request
// without a kind or a description, an action of another task, a task that
// does not exist, and a request id reused for another finding. A repeat is
// the same finding. The timeline and the receipt show it. The second
// finding is recorded with `steward audit finding`.
func recordFindings(t *testing.T, url string, agent, auditor authed, onAction, actionID, ended string) {
	t.Helper()
	ctx := context.Background()
	record := func(c authed, req *stewardv1.RecordFindingRequest) (*stewardv1.RecordFindingResponse, error) {
		resp, err := c.audit.RecordFinding(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}
	violation := stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION
	good := &stewardv1.RecordFindingRequest{TaskId: onAction, RequestId: "finding-1", Kind: violation, ActionId: actionID, Description: "wired without the ticket policy asks for"}
	for _, tt := range []struct {
		why   string
		by    authed
		req   *stewardv1.RecordFindingRequest
		code  connect.Code
		field string
	}{
		{"without the auditor role", agent, good, connect.CodePermissionDenied, ""},
		{"without a kind", auditor, &stewardv1.RecordFindingRequest{TaskId: onAction, Description: "x"}, connect.CodeInvalidArgument, "kind"},
		{"without a description", auditor, &stewardv1.RecordFindingRequest{TaskId: onAction, Kind: violation}, connect.CodeInvalidArgument, "description"},
		{"about another task's action", auditor, &stewardv1.RecordFindingRequest{TaskId: ended, Kind: violation, ActionId: actionID, Description: "x"}, connect.CodeInvalidArgument, "action_id"},
		{"on no task", auditor, &stewardv1.RecordFindingRequest{TaskId: "no-such-task", Kind: violation, Description: "x"}, connect.CodeNotFound, ""},
	} {
		_, err := record(tt.by, tt.req)
		if connect.CodeOf(err) != tt.code || !strings.Contains(fmt.Sprint(err), tt.field) {
			t.Errorf("a finding %s: %v, want %v naming %q", tt.why, err, tt.code, tt.field)
		}
	}
	first, err := record(auditor, good)
	if err != nil {
		t.Fatal(err)
	}
	f := first.Finding
	if !first.Created || f.FindingId == "" || f.RecordedBy != "user:audrey" || f.ActionId != actionID || f.RecordedAt == nil {
		t.Fatalf("recorded finding: %v", first)
	}
	repeat, err := record(auditor, good)
	if err != nil || repeat.Created || repeat.Finding.FindingId != f.FindingId {
		t.Fatalf("a repeat: %v %v, want the same finding, not created", repeat, err)
	}
	other := &stewardv1.RecordFindingRequest{TaskId: onAction, RequestId: "finding-1", Kind: violation, Description: "something else"}
	if _, err := record(auditor, other); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("request id reused for another finding: %v, want already_exists", err)
	}
	cli := exec.Command(binary, "audit", "finding", "--addr", url, "--task", ended, "--request-id", "finding-2", "--description", "cancelled to hide the denied write")
	cli.Env = append(os.Environ(), "STEWARD_TOKEN="+auditorToken)
	out, err := cli.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "recorded finding ") || !strings.Contains(string(out), "on task "+ended+" by user:audrey") {
		t.Fatalf("steward audit finding on an ended task: %v: %s", err, out)
	}

	tl, err := agent.query.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: onAction}))
	if err != nil {
		t.Fatal(err)
	}
	last := tl.Msg.Entries[len(tl.Msg.Entries)-1]
	if want := "user:audrey recorded finding " + f.FindingId + ", a policy violation, about action " + actionID + ": wired without"; !strings.HasPrefix(last.Summary, want) {
		t.Errorf("the timeline ends with %q, want it to start %q", last.Summary, want)
	}
	rc, err := agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: onAction}))
	if err != nil {
		t.Fatal(err)
	}
	if fs := rc.Msg.Receipt.Findings; len(fs) != 1 || fs[0].FindingId != f.FindingId || !strings.Contains(rc.Msg.Markdown, "## Audit findings") || !strings.Contains(rc.Msg.Markdown, "wired without the ticket policy asks for") {
		t.Errorf("the receipt does not show the finding: %v\n%s", fs, rc.Msg.Markdown)
	}
}

// eventTime returns when the task's first event of type typ was recorded.
func eventTime(t *testing.T, c authed, taskID, typ string) time.Time {
	t.Helper()
	tl, err := c.query.GetTimeline(context.Background(), connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tl.Msg.Entries {
		if e.Type == typ {
			return e.Time.AsTime()
		}
	}
	t.Fatalf("task %s has no %s event", taskID, typ)
	return time.Time{}
}
