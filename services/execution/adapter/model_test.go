package adapter_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/adapter"
)

// modelTool is a model tool over the fake at url, priced 2,000 micros per
// 1,000 tokens in and 4,000 out, with its key in a file.
func modelTool(t *testing.T, url string) *stewardv1.ToolContract {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("sk-test-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &stewardv1.ToolContract{Name: "llm", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		Timeout: durationpb.New(300 * time.Millisecond),
		Endpoint: &stewardv1.ToolContract_Model{Model: &stewardv1.ModelEndpoint{BaseUrl: url, Model: "gpt-test", Provider: "openai",
			KeyFile: key, MaxTokens: 100, InputMicrosPer_1K: 2000, OutputMicrosPer_1K: 4000}}}
}

func chatRequest(key string, params string) adapter.Request {
	return adapter.Request{TaskID: "t1", ActionID: "a-" + key, OpKey: key,
		Body: []byte(`{"params":` + params + `,"target":"","task_id":"t1","tool":"llm","tool_version":"1"}`)}
}

const hello = `{"messages":[{"role":"user","content":"hello"}]}`

// TestModelCallClassifiesAnswers: each way a model answers is a result of
// its own — an answer with its usage charged at the contract's price and
// the key sent from its file (never in the result); a rate limit that may
// be sent again (nothing arrived); a conversation past the context and a
// refusal, which are not; a server error and a timeout after sending,
// which may have been paid for (arrived); and a call asking for more
// tokens than the tool allows, which is never sent. The fake counts what
// reached it.
func TestModelCallClassifiesAnswers(t *testing.T) {
	replies := map[string]stewardtest.FakeReply{
		"ok":      {Content: "hi there", PromptTokens: 10, CompletionTokens: 5, Model: "gpt-test-0613"},
		"limited": {Status: 429, ErrorCode: "rate_limit_exceeded"},
		"long":    {Status: 400, ErrorCode: "context_length_exceeded"},
		"refused": {FinishReason: "content_filter", PromptTokens: 7, CompletionTokens: 0},
		"broken":  {Status: 502},
		"slow":    {Hang: true},
	}
	fake := stewardtest.StartFakeModel(t, func(_ int, req stewardtest.FakeModelRequest) stewardtest.FakeReply { return replies[req.Key] })
	tool := modelTool(t, fake.URL)
	ad := adapter.NewModel(nil)
	call := func(key, params string) adapter.Result {
		req := chatRequest(key, params)
		req.Tool = tool
		return ad.Call(context.Background(), req)
	}

	res := call("ok", hello)
	var got adapter.ModelResult
	if err := json.Unmarshal(res.Body, &got); err != nil || res.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("ok: %+v (%v)", res, err)
	}
	if got.Content != "hi there" || got.Model != "gpt-test-0613" || got.CallID == "" || got.Usage.PromptTokens != 10 || got.Usage.CompletionTokens != 5 ||
		res.Tokens != 15 || res.CostMicros != 40 || !res.Arrived {
		t.Errorf("ok: result %+v, tokens %d, cost %d", got, res.Tokens, res.CostMicros)
	}
	asked := fake.Asked()[0]
	if asked.Authorization != "Bearer sk-test-secret" || asked.Model != "gpt-test" || asked.MaxTokens != 100 || strings.Contains(string(res.Body), "sk-test") {
		t.Errorf("the request: %+v; the result %s", asked, res.Body)
	}

	for _, tt := range []struct {
		key     string
		status  stewardv1.ActionStatus
		class   stewardv1.FailureClass
		arrived bool
		failure string
	}{
		{"limited", stewardv1.ActionStatus_ACTION_STATUS_FAILED, stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, false, adapter.ModelRateLimited},
		{"long", stewardv1.ActionStatus_ACTION_STATUS_FAILED, stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC, true, adapter.ModelContextLength},
		{"refused", stewardv1.ActionStatus_ACTION_STATUS_FAILED, stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC, true, adapter.ModelRefused},
		{"broken", stewardv1.ActionStatus_ACTION_STATUS_FAILED, stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, true, adapter.ModelServerError},
		{"slow", stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, stewardv1.FailureClass_FAILURE_CLASS_UNSPECIFIED, true, adapter.ModelTimeout},
	} {
		res := call(tt.key, hello)
		if res.Status != tt.status || res.FailureClass != tt.class || res.Arrived != tt.arrived || res.ModelFailure != tt.failure {
			t.Errorf("%s: %v %v arrived %v failure %q (%s)", tt.key, res.Status, res.FailureClass, res.Arrived, res.ModelFailure, res.Reason)
		}
	}
	if res := call("refused", hello); res.Tokens != 7 {
		t.Errorf("a refusal is paid for: tokens %d, want 7", res.Tokens)
	}

	before := fake.Requests()
	if res := call("greedy", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":101}`); res.Status != stewardv1.ActionStatus_ACTION_STATUS_FAILED ||
		res.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC || res.Arrived {
		t.Errorf("past the token cap: %+v", res)
	}
	if fake.Requests() != before {
		t.Errorf("a call past the token cap reached the model")
	}
	if n := fake.ByKey()["slow"]; n != 1 {
		t.Errorf("the call that timed out reached the model %d times, want 1", n)
	}
}

// TestModelAnswersCutOffOrPastReason: a 200 whose answer is cut off
// mid-body was paid for and said something no one read — unknown, never
// a free failure — and a usage reported past reason costs the most there
// is, not a negative amount.
func TestModelAnswersCutOffOrPastReason(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.Header.Get(adapter.HeaderIdempotencyKey) {
		case "huge":
			_, _ = w.Write([]byte(`{"id":"c2","model":"m","choices":[{"message":{"role":"assistant","content":"x"}}],` +
				`"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":9223372036854775807}}`))
			return
		case "negative":
			_, _ = w.Write([]byte(`{"id":"c3","model":"m","choices":[{"message":{"role":"assistant","content":"x"}}],` +
				`"usage":{"prompt_tokens":-1,"completion_tokens":-5}}`))
			return
		}
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte(`{"id":"c1","model":"gpt-test","choices":[{"message":{"role":"assistant","content":"par`))
	}))
	t.Cleanup(srv.Close)
	tool := modelTool(t, srv.URL)
	call := func(key string) adapter.Result {
		req := chatRequest(key, hello)
		req.Tool = tool
		return adapter.NewModel(nil).Call(context.Background(), req)
	}
	if res := call("cut"); res.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN || !res.Arrived || res.ModelFailure != adapter.ModelUnreadable {
		t.Errorf("an answer cut off: %v arrived %v failure %q (%s)", res.Status, res.Arrived, res.ModelFailure, res.Reason)
	}
	if res := call("huge"); res.Tokens != 2<<40 || res.CostMicros <= 0 {
		t.Errorf("a usage past reason: tokens %d, cost %d; want the most a call is charged, 2^41 tokens", res.Tokens, res.CostMicros)
	}
	if res := call("negative"); res.Status != stewardv1.ActionStatus_ACTION_STATUS_FAILED || res.Tokens != 0 || res.CostMicros != 0 {
		t.Errorf("a negative usage: %s, tokens %d, cost %d; want a failure charged nothing", res.Status, res.Tokens, res.CostMicros)
	}
}
