package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// startTableEnv starts the one server every row of the errors table is
// checked against, with flags added.
func startTableEnv(t *testing.T, flags ...string) *harness {
	// slow never answers in time: the outcome is unknown.
	tool := stewardtest.StartTool(t).Always("/slow", stewardtest.Silent)
	// Every tool declares an effect class and a data sensitivity: a
	// contract without them is refused.
	flags = append(flags, "--reserved-tool-names", "table-reserved")
	return startSteward(t, setup{nats: true, flags: flags, tools: []string{
		fmt.Sprintf(`{"name": "search", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC",
	   "parametersSchema": "{\"type\":\"object\",\"required\":[\"q\"],\"properties\":{\"q\":{\"type\":\"string\",\"minLength\":1}}}",
	   "retryPolicy": {"maxAttempts": 2}, "http": {"url": %q}}`, tool.URL+"/search"),
		fmt.Sprintf(`{"name": "wire", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_CONFIDENTIAL",
	   "parametersSchema": "{\"type\":\"object\",\"required\":[\"amount\"],\"properties\":{\"amount\":{\"type\":\"integer\",\"minimum\":1}}}",
	   "http": {"url": %q}}`, tool.URL+"/wire"),
		fmt.Sprintf(`{"name": "ledger", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	   "requiredScopes": ["payments:write"], "http": {"url": %q}}`, tool.URL+"/ledger"),
		fmt.Sprintf(`{"name": "slow", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC",
	   "timeout": "1s", "http": {"url": %q}}`, tool.URL+"/slow"),
	}})
}

// onField asserts that err carries a BadRequest detail naming field, and
// returns err.
func onField(t *testing.T, err error, field string) error {
	t.Helper()
	if got := badRequestField(err); got != field {
		t.Errorf("%v: names field %q, want %q", err, got, field)
	}
	return err
}

// badRequestField is the field err's BadRequest detail names, or "".
func badRequestField(err error) string {
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		return ""
	}
	for _, d := range cerr.Details() {
		if v, derr := d.Value(); derr == nil {
			if br, ok := v.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 {
				return br.FieldViolations[0].Field
			}
		}
	}
	return ""
}

// saying asserts that err's message contains each of words, and returns err.
func saying(t *testing.T, err error, words ...string) error {
	t.Helper()
	for _, w := range words {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v: does not say %q", err, w)
		}
	}
	return err
}

// alike asserts that errs, several inputs one answer covers, all carry the
// same code, and returns the first to stand for them.
func alike(t *testing.T, errs ...error) error {
	t.Helper()
	for i, err := range errs[1:] {
		if err == nil || connect.CodeOf(err) != connect.CodeOf(errs[0]) {
			t.Errorf("input %d: %v, unlike input 1: %v", i+2, err, errs[0])
		}
	}
	return errs[0]
}

// eventCount is how many events taskID has.
func (e *harness) eventCount(t *testing.T, taskID string) uint32 {
	t.Helper()
	return getTask(t, e.agent.clients, taskID).EventCount
}

// unchanged asserts that calls append nothing to taskID, and returns
// their errors.
func (e *harness) unchanged(t *testing.T, taskID string, calls ...func() error) []error {
	t.Helper()
	before := e.eventCount(t, taskID)
	out := make([]error, len(calls))
	for i, call := range calls {
		out[i] = call()
	}
	if after := e.eventCount(t, taskID); after != before {
		t.Errorf("task %s went from %d to %d events on refused calls: %s", taskID, before, after, e.lastEvents(t, taskID, int(after-before)))
	}
	return out
}

// lastEvents describes the last n events of taskID, from its timeline:
// what a refused call should not have appended.
func (e *harness) lastEvents(t *testing.T, taskID string, n int) string {
	t.Helper()
	res, err := e.agent.clients.query.GetTimeline(context.Background(), connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: taskID}))
	if err != nil {
		return "(no timeline: " + err.Error() + ")"
	}
	entries := res.Msg.Entries
	var b strings.Builder
	for _, en := range entries[max(0, len(entries)-n):] {
		fmt.Fprintf(&b, "[%d %s by %s: %s] ", en.Sequence, en.Type, en.Actor, en.Summary)
	}
	return b.String()
}

// governed is a contract that allows search and wire, authorized by user:bo.
func governed() *stewardv1.TaskContract {
	k := contract()
	k.AllowedTools = []string{"search", "wire"}
	k.AuthorizerRef = "user:bo"
	return k
}

// translated is what the RPC edge answers for a domain error.
func translated(err error) error {
	return rpc.ToConnect(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), err)
}

// raw sends body, as it is, to procedure ("Service/Method" of steward.v1)
// as the agent: JSON over Connect, or binary protobuf over gRPC.
func (e *harness) raw(t *testing.T, procedure, encoding string, body []byte) error {
	t.Helper()
	opts := []connect.ClientOption{connect.WithCodec(rawCodec{name: encoding}), connect.WithInterceptors(stewardtest.Bearer(agentToken))}
	if encoding == "proto" {
		opts = append(opts, connect.WithGRPC())
	}
	client := connect.NewClient[rawMessage, rawMessage](&http.Client{Timeout: 30 * time.Second}, e.url+"/steward.v1."+procedure, opts...)
	_, err := client.CallUnary(context.Background(), connect.NewRequest(&rawMessage{b: body}))
	return err
}

// get sends a Connect GET with query to procedure and returns its answer
// as an error with the code and BadRequest field the answer carries.
func (e *harness) get(t *testing.T, procedure, query string) error {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.url+"/steward.v1."+procedure+"?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+agentToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	codeName, field := connectError(resp, answer)
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var code connect.Code
	if err := code.UnmarshalText([]byte(codeName)); err != nil {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, answer)
	}
	out := connect.NewError(code, fmt.Errorf("%s", answer))
	if field != "" {
		if d, err := connect.NewErrorDetail(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field}}}); err == nil {
			out.AddDetail(d)
		}
	}
	return out
}

// tamper rewrites who caused taskID's last event and appends the forgery
// behind the server's back, straight onto the stream over NATS, as a
// damaged disk or a hostile operator might. It returns its sequence.
func (e *harness) tamper(t *testing.T, taskID string) uint64 {
	t.Helper()
	ctx := context.Background()
	js, stream := e.events(t)
	// A task's events are stored one subject per type; the wildcard
	// finds its last, whatever its type.
	last, err := stream.GetLastMsgForSubject(ctx, "steward.task."+taskID+".>")
	if err != nil {
		t.Fatal(err)
	}
	var ev stewardv1.Event
	if err := proto.Unmarshal(last.Data, &ev); err != nil {
		t.Fatal(err)
	}
	if want := "steward.task." + taskID + "." + ev.Type; last.Subject != want {
		t.Fatalf("the live binary stored a %s event under %s, want %s", ev.Type, last.Subject, want)
	}
	ev.Actor = &stewardv1.Actor{Principal: "user:mallory", Plane: "control"}
	forged, err := proto.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, last.Subject, forged)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

// propose proposes tool with params (none when nil) on taskID as the agent
// and returns the error.
func (e *harness) propose(t *testing.T, taskID, proposalID, tool, version string, params map[string]any, retry *stewardv1.RetryPolicy) error {
	t.Helper()
	s, err := structpb.NewStruct(params)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.agent.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: proposalID, Tool: tool, ToolVersion: version, Target: "acct:42", Params: s, RetryPolicy: retry, Rationale: argued,
	}))
	return err
}

// actionOf is the id of the action proposalID made on taskID.
func (e *harness) actionOf(t *testing.T, taskID, proposalID string) string {
	t.Helper()
	for _, a := range getTask(t, e.agent.clients, taskID).Actions {
		if a.ProposalId == proposalID {
			return a.ActionId
		}
	}
	t.Fatalf("task %s has no action from proposal %s", taskID, proposalID)
	return ""
}

func (e *harness) decide(c authed, approvalID, hash string) error {
	_, err := c.governance.DecideApproval(context.Background(), connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: approvalID, ActionHash: hash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, Comment: "ok",
	}))
	return err
}

func (e *harness) settle(c stewardv1connect.ActionServiceClient, a actionRef, state stewardv1.SettleState, reason string) error {
	_, err := c.SettleAction(context.Background(), connect.NewRequest(&stewardv1.SettleActionRequest{TaskId: a.task, ActionId: a.action, State: state, Reason: reason}))
	return err
}

// exitsNaming runs the binary with args and checks that it exits with
// status 1, saying each of words on stderr.
func exitsNaming(t *testing.T, args []string, words ...string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("steward %s: %v, want exit status 1", strings.Join(args, " "), err)
	}
	for _, w := range words {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("steward %s said %q on stderr; want it to name %q", strings.Join(args, " "), stderr.String(), w)
		}
	}
}
