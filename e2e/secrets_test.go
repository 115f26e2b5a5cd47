package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestSecretsNeverInClear proposes actions with parameters their tool's
// schema marks secret (writeOnly, x-steward-secret), against the real
// binary and a real HTTP tool, and greps for the clear values everywhere
// Steward keeps or says something: the JetStream store files in the data
// directory (the event log, the dead-letter stream, every KV bucket), the
// process's log at debug level, the task and receipt as served, an audit
// export, and error messages — the answer to a refused proposal, and the
// failure reason of a tool that quoted its request back, the pending
// approval (which shows the commitment, and whose decision binds it), and
// the results
// of one that echoes its request (redacted); and a plan's secret literal
// params, in the plan as GetTask, ListTasks, WatchTask, ReplayTask and the
// export show it (planSecrets, readSurfaces). None holds one,
// while a parameter that is not secret is there to be found. The tool
// receives the clear values; the same value makes the same request_hash,
// a changed one another. (Steward sends no webhooks.)
func TestSecretsNeverInClear(t *testing.T) {
	tool := stewardtest.StartTool(t)
	salt := event.RandomID()[:8]
	var (
		user     = "user-in-clear-" + salt // not secret: the control
		password = "pw-" + salt + "-hunter2"
		apiKey   = "key-" + salt + "-0xfeed"
		changed  = "pw-" + salt + "-changed"
		echoed   = "pw-" + salt + "-echoed"
		refused  = "xx-" + salt + "-refused"
	)
	secrets := []string{password, apiKey, changed, echoed, refused}
	tool.Always("/fail", stewardtest.Answer{Code: 400, Body: `{"message":"wrong password ` + echoed + `"}`})
	schema := `{"type":"object","required":["user","password"],"properties":{` +
		`"user":{"type":"string"},` +
		`"password":{"type":"string","writeOnly":true,"pattern":"^pw-"},` +
		`"api_key":{"type":"string","x-steward-secret":true}}}`
	entry := func(name, effect, path string) string {
		return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "effectClass": %q, "dataSensitivity": "DATA_SENSITIVITY_CONFIDENTIAL",
		  "parametersSchema": %q, "http": {"url": %q}}`, name, effect, schema, tool.URL+path)
	}
	h := startSteward(t, setup{tools: []string{
		entry("login", "EFFECT_CLASS_READ", "/login"), entry("login_fail", "EFFECT_CLASS_READ", "/fail"), entry("rotate", "EFFECT_CLASS_IRREVERSIBLE", "/rotate"),
	}, flags: []string{"--log-level", "debug"}})
	k := contract()
	k.AllowedTools = []string{"login", "login_fail", "rotate"}
	k.AuthorizerRef = "user:bo"
	taskID := h.create(t, "secrets", k)
	ctx := context.Background()

	a := propose(t, h.agent, taskID, "p1", "login", map[string]any{"user": user, "password": password, "api_key": apiKey})
	_, a = waitAction(t, h.agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	var got struct{ User, Password, APIKey string }
	for _, w := range tool.Worked() {
		var p map[string]string
		if err := json.Unmarshal(w.Params, &p); err != nil {
			t.Fatal(err)
		}
		got.User, got.Password, got.APIKey = p["user"], p["password"], p["api_key"]
	}
	if got.User != user || got.Password != password || got.APIKey != apiKey {
		t.Errorf("the tool received %+v; want the clear values", got)
	}

	same := propose(t, h.agent, taskID, "p2", "login", map[string]any{"user": user, "password": password, "api_key": apiKey})
	other := propose(t, h.agent, taskID, "p3", "login", map[string]any{"user": user, "password": changed, "api_key": apiKey})
	if same.RequestHash != a.RequestHash {
		t.Errorf("the same secret value made request_hash %s, then %s", a.RequestHash, same.RequestHash)
	}
	if other.RequestHash == a.RequestHash {
		t.Errorf("a changed secret value made the same request_hash %s", a.RequestHash)
	}
	waitAction(t, h.agent.clients, taskID, other.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	var said []told // what Steward answered or recorded that might quote a value

	// An approver sees the commitment, and approves the hash that binds it.
	rotate := propose(t, h.agent, taskID, "p6", "rotate", map[string]any{"user": user, "password": changed})
	waitAction(t, h.agent.clients, taskID, rotate.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	list, err := h.approver.governance.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: taskID, PendingOnly: true}))
	if err != nil || len(list.Msg.Approvals) != 1 {
		t.Fatalf("pending approvals: %v, %v", list, err)
	}
	ap := list.Msg.Approvals[0]
	b, _ := protojson.Marshal(list.Msg)
	said = append(said, told{"the approvals", string(b)})
	var shown map[string]any
	if err := json.Unmarshal([]byte(ap.ParametersJson), &shown); err != nil {
		t.Fatal(err)
	}
	if c, _ := shown["password"].(map[string]any)["$secret"].(string); ap.ActionHash != rotate.ActionHash || shown["user"] != user || !strings.HasPrefix(c, "hmac-sha256:") {
		t.Fatalf("the approval shows %s for action hash %s; want the user in clear and the password's commitment", ap.ParametersJson, ap.ActionHash)
	}
	if _, err := h.approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: ap.ApprovalId, ActionHash: rotate.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, Comment: "rotate it",
	})); err != nil {
		t.Fatal(err)
	}
	waitAction(t, h.agent.clients, taskID, rotate.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if w := tool.Worked(); !strings.Contains(string(w[len(w)-1].Params), `"password":"`+changed+`"`) {
		t.Errorf("the approved call sent %s; want the clear password", w[len(w)-1].Params)
	}

	failed := propose(t, h.agent, taskID, "p4", "login_fail", map[string]any{"user": user, "password": echoed})
	_, failed = waitAction(t, h.agent.clients, taskID, failed.ActionId, stewardv1.ActionStatus_ACTION_STATUS_FAILED)
	if !strings.Contains(failed.Outcome.GetReason(), "[secret]") {
		t.Errorf("the tool's failure reads %q; want its quote of the secret redacted", failed.Outcome.GetReason())
	}
	params, err := structpb.NewStruct(map[string]any{"user": user, "password": refused})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: "p5", Tool: "login", Params: params, Rationale: argued}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("a password against the pattern: %v, want InvalidArgument", err)
	}
	said = append(said, told{"an error message", err.Error()})
	planned, refusal := planSecrets(t, h, tool, taskID, user, salt)
	secrets = append(secrets, planned...)
	said = append(said, refusal...)

	task, err := h.agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = protojson.Marshal(task.Msg)
	said = append(said, told{"the served task", string(b)})
	for _, name := range []string{"password", "api_key"} {
		shown, _ := commitments(t, task.Msg.Task.Plan)[name].(map[string]any)
		if c, _ := shown["$secret"].(string); !strings.HasPrefix(c, "hmac-sha256:") {
			t.Errorf("the served plan shows no commitment for its literal %s: %v", name, commitments(t, task.Msg.Task.Plan))
		}
	}
	said = append(said, readSurfaces(t, h, taskID)...)
	for _, a := range task.Msg.Task.Actions {
		if !strings.Contains(string(a.Request), `"password":{"$secret":"hmac-sha256:`) {
			t.Errorf("action %s's request shows no commitment for the password: %s", a.ProposalId, a.Request)
		}
		if strings.Contains(string(a.Outcome.GetResult()), "[secret]") != (a.Outcome.GetResult() != nil) {
			t.Errorf("action %s's result, which echoes its request, is %s; want the secrets redacted", a.ProposalId, a.Outcome.GetResult())
		}
	}
	receipt, err := h.agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = protojson.Marshal(receipt.Msg)
	said = append(said, told{"the receipt", string(b)})
	export := filepath.Join(t.TempDir(), "export.jsonl")
	run(t, 0, "audit", "export", "--task", taskID, "--out", export, "--addr", h.url, "--token", agentToken)
	b, err = os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), user) {
		t.Fatal("the export holds not even the parameter that is not secret: the grep proves nothing")
	}
	said = append(said, told{"the audit export", string(b)})

	h.proc.stop(t) // every store file written and closed
	said = append(said, told{"the log", h.proc.logged()}, told{"the standard output", h.proc.printed()})
	var stored strings.Builder
	files := 0
	err = filepath.WalkDir(filepath.Join(h.dir, "data"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files++
		stored.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stored.String(), user) {
		t.Fatalf("the %d files of the data directory hold not even the parameter that is not secret: the grep proves nothing", files)
	}
	if !strings.Contains(h.proc.logged(), "level=DEBUG") {
		t.Fatal("the log holds nothing at debug level: the grep proves little")
	}
	said = append(said, told{"the data directory's files", stored.String()})
	reported := map[told]bool{}
	for _, s := range said {
		for _, v := range secrets {
			if strings.Contains(s.text, v) && !reported[told{s.where, v}] {
				reported[told{s.where, v}] = true
				t.Errorf("%s holds the secret value %s", s.where, v)
			}
		}
	}
}
