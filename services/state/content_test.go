package state_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// serveContent serves a state plane with the results store over env, as
// the binary wires it, behind tokens (nil: open mode). It returns a
// client per token given.
func serveContent(t *testing.T, env *stewardtest.Env, tokens rpc.Tokens) func(token string) contentClient {
	t.Helper()
	p := startPlane(t, env.Log, env.Logger, state.Config{Results: env.Results, Digest: testSealer(t).Digest})
	mux := http.NewServeMux()
	for _, s := range p.Services(rpc.HandlerOptions(env.Logger, tokens, nil)) {
		mux.Handle(s.Path, s.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return func(token string) contentClient {
		var opts []connect.ClientOption
		if token != "" {
			opts = append(opts, connect.WithInterceptors(stewardtest.Bearer(token)))
		}
		return contentClient{
			QueryServiceClient: stewardv1connect.NewQueryServiceClient(srv.Client(), srv.URL, opts...),
			audit:              stewardv1connect.NewAuditServiceClient(srv.Client(), srv.URL, opts...),
		}
	}
}

// contentClient calls the state plane as one caller: its queries, and its
// audit service for the raw events.
type contentClient struct {
	stewardv1connect.QueryServiceClient
	audit stewardv1connect.AuditServiceClient
}

// resultOutcome is a succeeded outcome of action id whose result is data:
// inline when small, else put in the results store, as the execution
// plane keeps it.
func resultOutcome(t *testing.T, env *stewardtest.Env, id string, data []byte) *stewardv1.ActionOutcomeRecorded {
	t.Helper()
	inline, ref, hash, err := env.Results.Keep(context.Background(), "t1", data)
	if err != nil {
		t.Fatal(err)
	}
	return &stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Result: inline, ResultRef: ref, ResultHash: hash, Attempt: 1,
	}}
}

// bigResult is a JSON result larger than the inline bound.
func bigResult(t *testing.T) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"rows": strings.Repeat("r", 3*action.MaxInlineRequest), "n": 3})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// sameJSON reports whether two JSON documents are equal as values.
func sameJSON(t *testing.T, a, b []byte) bool {
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

// TestGetResultReadsResultsBack reads three results through GetResult:
// one inline in its outcome, one in the results store, and the result an
// unknown outcome was settled with. Each comes back as the tool's JSON with
// the outcome's hash and the size of the bytes; an action without a result,
// an unknown action and bad ids are refused.
func TestGetResultReadsResultsBack(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	small, big := []byte(`{"customer":"acme","tier":"gold"}`), bigResult(t)
	settledBody := []byte(`{"transfer":"tx-9","state":"booked"}`)
	settledRef, settledHash, err := env.Results.Put(ctx, "t1", settledBody)
	if err != nil {
		t.Fatal(err)
	}
	h := running()
	h = append(h, act("inline", "lookup", "crm", "r1")...)
	h = append(h, resultOutcome(t, env, "inline", small))
	h = append(h, act("stored", "lookup", "crm", "r1")...)
	h = append(h, resultOutcome(t, env, "stored", big))
	h = append(h, act("settled", "wire", "bank", "r1")...)
	h = append(h,
		&stewardv1.ActionOutcomeRecorded{ActionId: "settled", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, Attempt: 1}},
		&stewardv1.ActionSettled{ActionId: "settled", State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, ResultRef: settledRef, ResultHash: settledHash, SettledBy: "status query"},
	)
	h = append(h, act("running", "lookup", "crm", "r1")...)
	env.Append("t1", h...)
	client := serveContent(t, env, nil)("")

	for id, want := range map[string][]byte{"inline": small, "stored": big, "settled": settledBody} {
		got, err := client.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: id}))
		if err != nil {
			t.Fatalf("GetResult %s: %v", id, err)
		}
		js, err := protojson.Marshal(got.Msg.Result)
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(t, js, want) {
			t.Errorf("GetResult %s = %s, want %s", id, js, want)
		}
		if got.Msg.ResultHash != action.RequestHash(want) || got.Msg.SizeBytes != int64(len(want)) {
			t.Errorf("GetResult %s: hash %s, %d bytes; want %s, %d", id, got.Msg.ResultHash, got.Msg.SizeBytes, action.RequestHash(want), len(want))
		}
	}

	for _, tt := range []struct {
		taskID, actionID string
		code             connect.Code
		says             string
	}{
		{"", "inline", connect.CodeInvalidArgument, "task_id: is required"},
		{"t1", "", connect.CodeInvalidArgument, "action_id: is required"},
		{"nope", "inline", connect.CodeNotFound, "task nope not found"},
		{"t1", "a9", connect.CodeNotFound, `task t1 has no action "a9"`},
		{"t1", "running", connect.CodeNotFound, "action running of task t1 has no result: it is dispatched"},
	} {
		_, err := client.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: tt.taskID, ActionId: tt.actionID}))
		if connect.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("GetResult(%q, %q) = %v, want %v saying %q", tt.taskID, tt.actionID, err, tt.code, tt.says)
		}
	}
}

// TestGetResultRefusesCorruptBytes serves results whose stored bytes are
// not what the log recorded: other bytes under the recorded key, or none.
// GetResult answers DataLoss rather than serve them. (The store is
// write-once, so the other bytes are written before the outcome that names
// their key, as a plane with write access to the bucket could.) A plane
// without the results store still serves an inline result and says why it
// cannot serve a stored one.
func TestGetResultRefusesCorruptBytes(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	big := bigResult(t)
	forged := bytes.Replace(big, []byte(`"n":3`), []byte(`"n":4`), 1)
	kv, err := env.JS.KeyValue(ctx, action.ResultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, action.RequestHash(big), forged); err != nil {
		t.Fatal(err)
	}
	storedAs := func(id string, data []byte) *stewardv1.ActionOutcomeRecorded {
		h := action.RequestHash(data)
		return &stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{
			Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, ResultRef: "kv://" + action.ResultBucket + "/" + h, ResultHash: h, Attempt: 1,
		}}
	}
	h := running()
	h = append(h, act("stored", "lookup", "crm", "r1")...)
	h = append(h, storedAs("stored", big))
	h = append(h, act("missing", "lookup", "crm", "r1")...)
	h = append(h, storedAs("missing", append(big, ' ')))
	h = append(h, act("inline", "lookup", "crm", "r1")...)
	h = append(h, resultOutcome(t, env, "inline", []byte(`[1,2,3]`)))
	env.Append("t1", h...)
	client := serveContent(t, env, nil)("")

	_, err = client.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "stored"}))
	if connect.CodeOf(err) != connect.CodeDataLoss || !strings.Contains(err.Error(), "hashes to "+action.RequestHash(forged)) {
		t.Errorf("GetResult of forged bytes = %v, want DataLoss naming their hash", err)
	}
	_, err = client.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "missing"}))
	if connect.CodeOf(err) != connect.CodeDataLoss || !strings.Contains(err.Error(), "missing from the store") {
		t.Errorf("GetResult of missing bytes = %v, want DataLoss", err)
	}

	bare := startPlane(t, env.Log, env.Logger, state.Config{})
	mux := http.NewServeMux()
	for _, s := range bare.Services(rpc.HandlerOptions(env.Logger, nil, nil)) {
		mux.Handle(s.Path, s.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	noStore := stewardv1connect.NewQueryServiceClient(srv.Client(), srv.URL)
	if _, err := noStore.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "inline"})); err != nil {
		t.Errorf("GetResult of an inline result without a store: %v", err)
	}
	_, err = noStore.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "stored"}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "no results store") {
		t.Errorf("GetResult of a stored result without a store = %v, want FailedPrecondition", err)
	}
}

// readArtifact reads a whole GetArtifactContent stream: the artifact of
// its first message and every chunk.
func readArtifact(ctx context.Context, client stewardv1connect.QueryServiceClient, req *stewardv1.GetArtifactContentRequest) (*stewardv1.Artifact, []byte, int, error) {
	stream, err := client.GetArtifactContent(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, nil, 0, err
	}
	defer stream.Close()
	var a *stewardv1.Artifact
	var content []byte
	msgs := 0
	for stream.Receive() {
		m := stream.Msg()
		if msgs == 0 {
			a = m.Artifact
		} else if m.Artifact != nil {
			return nil, nil, 0, errors.New("a message after the first carries the artifact")
		}
		content = append(content, m.Chunk...)
		msgs++
	}
	return a, content, msgs, stream.Err()
}

// artifactEvent records content as version v of artifact name, stored in
// the results store.
func artifactEvent(t *testing.T, env *stewardtest.Env, name string, v uint32, content []byte) *stewardv1.ArtifactSubmitted {
	t.Helper()
	ref, hash, err := env.Results.Put(context.Background(), "t1", content)
	if err != nil {
		t.Fatal(err)
	}
	return &stewardv1.ArtifactSubmitted{Artifact: &stewardv1.Artifact{
		Name: name, MediaType: "text/markdown", Uri: ref, Sha256: hash, SizeBytes: int64(len(content)), Version: v, SubmittedBy: "agent:a",
	}}
}

// TestGetArtifactContentStreamsStoredContent reads artifacts back: the
// latest version by default and an earlier one by number, in chunks of
// ArtifactChunkBytes, the first message carrying the record. An artifact
// held elsewhere, an unknown name or version, and content that no longer
// matches its hash are refused, before any content is sent.
func TestGetArtifactContentStreamsStoredContent(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	v1 := []byte("# Weekly report\nAll quiet.\n")
	v2 := bytes.Repeat([]byte("0123456789abcdef"), (2*state.ArtifactChunkBytes+100)/16)
	// The forged artifact's key holds other bytes than its record names:
	// written first, since the store never overwrites a key.
	kv, err := env.JS.KeyValue(ctx, action.ResultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, action.Key("t1", action.RequestHash([]byte("the true content"))), []byte("the fake content")); err != nil {
		t.Fatal(err)
	}
	forgedArtifact := artifactEvent(t, env, "forged", 1, []byte("the true content"))
	h := append(running(),
		artifactEvent(t, env, "report", 1, v1),
		artifactEvent(t, env, "report", 2, v2),
		&stewardv1.ArtifactSubmitted{Artifact: &stewardv1.Artifact{
			Name: "dataset", MediaType: "text/csv", Uri: "s3://bucket/data.csv", Sha256: action.RequestHash([]byte("x")), SizeBytes: 1, Version: 1,
		}},
		forgedArtifact,
	)
	env.Append("t1", h...)
	client := serveContent(t, env, nil)("")

	for _, tt := range []struct {
		version uint32
		want    []byte
		msgs    int
	}{{0, v2, 3}, {2, v2, 3}, {1, v1, 1}} {
		a, content, msgs, err := readArtifact(ctx, client, &stewardv1.GetArtifactContentRequest{TaskId: "t1", Name: "report", Version: tt.version})
		if err != nil {
			t.Fatalf("version %d: %v", tt.version, err)
		}
		if !bytes.Equal(content, tt.want) || msgs != tt.msgs {
			t.Errorf("version %d: %d bytes in %d messages, want %d in %d", tt.version, len(content), msgs, len(tt.want), tt.msgs)
		}
		wantVersion := tt.version
		if wantVersion == 0 {
			wantVersion = 2
		}
		if a.GetName() != "report" || a.Sha256 != action.RequestHash(tt.want) || a.Version != wantVersion {
			t.Errorf("version %d: artifact %v", tt.version, a)
		}
	}

	for _, tt := range []struct {
		name    string
		version uint32
		code    connect.Code
		says    string
	}{
		{"", 0, connect.CodeInvalidArgument, "name: is required"},
		{"dataset", 0, connect.CodeFailedPrecondition, `submitted by reference: Steward does not hold its content; read it at "s3://bucket/data.csv"`},
		{"nothing", 0, connect.CodeNotFound, `task t1 has no artifact "nothing"`},
		{"report", 3, connect.CodeNotFound, `task t1 has no version 3 of artifact "report"`},
		{"forged", 0, connect.CodeDataLoss, "hashes to"},
	} {
		a, content, _, err := readArtifact(ctx, client, &stewardv1.GetArtifactContentRequest{TaskId: "t1", Name: tt.name, Version: tt.version})
		if connect.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("GetArtifactContent(%q, %d) = %v, want %v saying %q", tt.name, tt.version, err, tt.code, tt.says)
		}
		if a != nil || len(content) > 0 {
			t.Errorf("GetArtifactContent(%q, %d) sent %v and %d bytes before refusing", tt.name, tt.version, a, len(content))
		}
	}
}

// TestContentReadsNeedARightToTheTask serves the state plane behind
// tokens: the task's creator and the principals its contract names read
// its result and artifacts, as do the operator and auditor roles and the
// principals of the task it was delegated from; anyone else is refused
// with PermissionDenied, before anything about the action is said. Other
// reads (GetTask) stay open to every caller, as before.
func TestContentReadsNeedARightToTheTask(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	tokens := rpc.Tokens{}
	for _, id := range []rpc.Identity{
		{Principal: stewardtest.Principal}, // the creator of every test task
		{Principal: "user:a"},              // the requester and owner of t1
		{Principal: "user:bo"},             // t1's authorizer
		{Principal: "agent:sub"},           // the requester of t1's sub-task
		{Principal: "user:ops", Roles: []string{state.OperatorRole}},
		{Principal: "user:audit", Roles: []string{state.AuditorRole}},
		{Principal: "user:eve", Roles: []string{"authorizer"}},
	} {
		tokens["token-of-"+id.Principal+"-0123456789"] = id
	}
	k := contract(1)
	k.AuthorizerRef = "user:bo"
	h := []event.Payload{&stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{}}
	h = append(h, act("a1", "lookup", "crm", "r1")...)
	h = append(h, resultOutcome(t, env, "a1", []byte(`{"ok":true}`)), artifactEvent(t, env, "report", 1, []byte("report")))
	env.Append("t1", h...)
	sub := contract(2)
	sub.RequesterRef, sub.AccountableOwnerRef, sub.ParentTaskId = "agent:sub", "agent:sub", "t1"
	sh := []event.Payload{&stewardv1.TaskCreated{Contract: sub}, &stewardv1.TaskStarted{}}
	sh = append(sh, act("b1", "lookup", "crm", "r1")...)
	sh = append(sh, resultOutcome(t, env, "b1", []byte(`{"ok":"sub"}`)))
	env.Append("t2", sh...)
	as := serveContent(t, env, tokens)

	for _, tt := range []struct {
		who, taskID, actionID string
		allowed               bool
	}{
		{stewardtest.Principal, "t1", "a1", true},
		{"user:a", "t1", "a1", true},
		{"user:bo", "t1", "a1", true},
		{"user:ops", "t1", "a1", true},
		{"user:audit", "t1", "a1", true},
		{"user:a", "t2", "b1", true}, // a party of the parent task
		{"agent:sub", "t2", "b1", true},
		{"agent:sub", "t1", "a1", false}, // a sub-task's party does not read its parent
		{"user:eve", "t1", "a1", false},  // an approver role is not a right to the task
		{"user:eve", "t1", "nope", false},
	} {
		client := as("token-of-" + tt.who + "-0123456789")
		_, err := client.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: tt.taskID, ActionId: tt.actionID}))
		_, _, _, aerr := readArtifact(ctx, client, &stewardv1.GetArtifactContentRequest{TaskId: tt.taskID, Name: "report"})
		switch {
		case tt.allowed && err != nil:
			t.Errorf("%s reading %s/%s: %v", tt.who, tt.taskID, tt.actionID, err)
		case !tt.allowed && (connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), tt.who+" may not read the content of task "+tt.taskID)):
			t.Errorf("%s reading %s/%s = %v, want PermissionDenied", tt.who, tt.taskID, tt.actionID, err)
		case !tt.allowed && connect.CodeOf(aerr) != connect.CodePermissionDenied:
			t.Errorf("%s reading %s's artifact = %v, want PermissionDenied", tt.who, tt.taskID, aerr)
		case tt.allowed && tt.taskID == "t1" && aerr != nil:
			t.Errorf("%s reading %s's artifact: %v", tt.who, tt.taskID, aerr)
		}
	}
	if _, err := as("token-of-user:eve-0123456789").GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"})); err != nil {
		t.Errorf("GetTask by another principal: %v", err)
	}
	_, err := as("").GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "a1"}))
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("GetResult without a token = %v, want Unauthenticated", err)
	}
	// Without --auth nobody is proven, and everyone reads, as every other
	// call does.
	open := serveContent(t, env, nil)("")
	if _, err := open.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "a1"})); err != nil {
		t.Errorf("GetResult in open mode: %v", err)
	}
}
