package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestResultsReadBack reads what tools answered through the API of the
// real binary, with --auth: GetResult returns a small result that travelled
// inline and a large one from the results store, each as the tool's JSON
// under the hash its outcome records; the bytes behind a stored result,
// changed behind Steward's back, are refused as data_loss. An artifact
// submitted inline comes back whole from GetArtifactContent. A principal
// the task does not name is refused both, sees the small result's outcome
// in GetAction without its bytes and is refused ReplayTask; an operator
// reads them. The
// receipt shows the context and inputs the contract pinned.
func TestResultsReadBack(t *testing.T) {
	ctx := context.Background()
	tool := stewardtest.StartTool(t)
	big, err := json.Marshal(map[string]any{"rows": strings.Repeat("incident; ", 300), "count": 300})
	if err != nil {
		t.Fatal(err)
	}
	tool.Always("/big", stewardtest.Answer{Work: true, Body: string(big)})
	h := startSteward(t, setup{nats: true, tools: append(governedTools(tool),
		fmt.Sprintf(`{"name": "export", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	   "parametersSchema": "{\"type\":\"object\"}", "http": {"url": %q}}`, tool.URL+"/big"))})
	agent := h.agent
	k := contract()
	k.AllowedTools = []string{"search", "export"}
	digest := "sha256:" + strings.Repeat("5e", 32)
	k.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://kb/runbooks/oncall.md", Version: "v12", Digest: digest}}
	k.InputSnapshot = &stewardv1.InputSnapshot{Version: "week-48", Inputs: []*stewardv1.ContextRef{{Uri: "postgres://warehouse/incidents", Version: "2026-11-30"}}}
	taskID := h.create(t, "results-1", k)

	small := propose(t, agent, taskID, "read-1", "search", map[string]any{"q": "incidents"})
	_, smallDone := waitAction(t, agent.clients, taskID, small.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	large := propose(t, agent, taskID, "export-1", "export", map[string]any{"week": "48"})
	_, largeDone := waitAction(t, agent.clients, taskID, large.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if len(smallDone.Outcome.Result) == 0 || largeDone.Outcome.ResultRef == "" {
		t.Fatalf("want one result inline and one stored: %v; %v", smallDone.Outcome, largeDone.Outcome)
	}

	getResult := func(c authed, actionID string) (*stewardv1.GetResultResponse, error) {
		resp, err := c.query.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: taskID, ActionId: actionID}))
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}
	for _, tt := range []struct {
		a    *stewardv1.Action
		want []byte
	}{{smallDone, smallDone.Outcome.Result}, {largeDone, big}} {
		got, err := getResult(agent, tt.a.ActionId)
		if err != nil {
			t.Fatalf("GetResult %s: %v", tt.a.Tool, err)
		}
		js, err := protojson.Marshal(got.Result)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(t, js, tt.want) || got.ResultHash != tt.a.Outcome.ResultHash || got.ResultHash != action.RequestHash(tt.want) || got.SizeBytes != int64(len(tt.want)) {
			t.Errorf("GetResult %s = %s (%s, %d bytes), want %s (%s, %d bytes)", tt.a.Tool, js, got.ResultHash, got.SizeBytes, tt.want, tt.a.Outcome.ResultHash, len(tt.want))
		}
	}

	// An artifact submitted inline, read back.
	report := []byte("# Incidents, week 48\n\n" + strings.Repeat("All quiet.\n", 10_000))
	sub, err := agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{
		TaskId: taskID, RequestId: "report-1", Name: "report", MediaType: "text/markdown", Content: report,
	}))
	if err != nil {
		t.Fatal(err)
	}
	readArtifact := func(c authed) (*stewardv1.Artifact, []byte, error) {
		stream, err := c.query.GetArtifactContent(ctx, connect.NewRequest(&stewardv1.GetArtifactContentRequest{TaskId: taskID, Name: "report"}))
		if err != nil {
			return nil, nil, err
		}
		defer stream.Close()
		var a *stewardv1.Artifact
		var content []byte
		for stream.Receive() {
			if a == nil {
				a = stream.Msg().Artifact
			}
			content = append(content, stream.Msg().Chunk...)
		}
		return a, content, stream.Err()
	}
	a, content, err := readArtifact(agent)
	if err != nil {
		t.Fatalf("GetArtifactContent: %v", err)
	}
	if !bytes.Equal(content, report) || a.GetSha256() != sub.Msg.Artifact.Sha256 || a.GetVersion() != 1 {
		t.Errorf("GetArtifactContent: %d bytes of artifact %v; want the %d bytes submitted as %v", len(content), a, len(report), sub.Msg.Artifact)
	}

	// Rights: user:cy is not named by the task and holds no reading role.
	if _, err := getResult(h.viewer, smallDone.ActionId); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("GetResult by a principal the task does not name = %v, want permission_denied", err)
	}
	if _, _, err := readArtifact(h.viewer); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("GetArtifactContent by a principal the task does not name = %v, want permission_denied", err)
	}
	if _, err := getResult(h.operator, largeDone.ActionId); err != nil {
		t.Errorf("GetResult by an operator: %v", err)
	}
	// Nor does user:cy read the small result where it travels inline: the
	// view shows it that there is one (a keyed digest in place of its
	// plain hash), and the raw events are refused.
	getAction := func(c authed) *stewardv1.Outcome {
		resp, err := c.query.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: taskID, ActionId: smallDone.ActionId}))
		if err != nil {
			t.Fatalf("GetAction: %v", err)
		}
		return resp.Msg.Action.Outcome
	}
	if o := getAction(h.viewer); len(o.GetResult()) != 0 || !strings.HasPrefix(o.GetResultHash(), "hmac-sha256:") {
		t.Errorf("GetAction shows a principal the task does not name the outcome %v; want a keyed digest of its result, without the result", o)
	}
	if o := getAction(h.operator); !bytes.Equal(o.GetResult(), smallDone.Outcome.Result) {
		t.Errorf("GetAction shows an operator the outcome %v; want its result", o)
	}
	replay, err := h.viewer.audit.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: taskID}))
	if err == nil {
		for replay.Receive() {
			t.Fatal("ReplayTask sent an event to a principal the task does not name")
		}
		err = replay.Err()
		replay.Close()
	}
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("ReplayTask by a principal the task does not name = %v, want permission_denied", err)
	}

	// The receipt names what the task was given, as its contract pinned it.
	rcpt, err := agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	if r := rcpt.Msg.Receipt; len(r.ContextRefs) != 1 || r.ContextRefs[0].Digest != digest || len(r.Inputs) != 1 || r.InputVersion != "week-48" ||
		!strings.Contains(rcpt.Msg.Markdown, "| context | `s3://kb/runbooks/oncall.md` | `v12` | `"+digest+"` |") {
		t.Errorf("the receipt shows context %v and inputs %v:\n%s", r.ContextRefs, r.Inputs, rcpt.Msg.Markdown)
	}

	// The stored bytes changed behind Steward's back: refused, not served.
	js, _ := h.events(t)
	overwriteBlob(t, js, largeDone.Outcome.ResultRef, bytes.Replace(big, []byte(`"count":300`), []byte(`"count":301`), 1))
	if _, err := getResult(agent, largeDone.ActionId); connect.CodeOf(err) != connect.CodeDataLoss {
		t.Errorf("GetResult of changed bytes = %v, want data_loss", err)
	}
}

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}
