package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"time"

	"github.com/steward-run/steward/pkg/egress"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The ways a model call fails, apart from a tool's (ModelFailure): counted
// by the execution plane as steward_model_call_failures_total.
const (
	ModelRateLimited   = "rate_limited"
	ModelContextLength = "context_length"
	ModelRefused       = "refused"
	ModelTimeout       = "timeout"
	ModelServerError   = "server_error"
	// ModelUnreadable: a 200 whose answer could not be read whole (cut
	// off, or past maxModelAnswer). It was paid for; what it said is
	// unknown, and the call is not sent again.
	ModelUnreadable = "unreadable"
)

// maxModelAnswer bounds what is read of a model's answer.
const maxModelAnswer = 4 << 20

// maxReportedTokens is the most tokens of one kind a call is charged: far
// past any model's context, and small enough that a task's totals never
// overflow summing them.
const maxReportedTokens = 1 << 40

// modelAdapter calls the models Steward asks itself, the llm.chat tools
// (docs/models.md): one POST of an OpenAI-compatible chat completion per
// call. A call is paid, so this adapter never sends one twice, and says
// when one may have reached the provider (Arrived) so that the execution
// plane does not either.
type modelAdapter struct {
	client *http.Client
	now    func() time.Time
}

// NewModel returns the Adapter for model tools, safe for concurrent use.
// A nil client means one of its own; it never follows redirects.
//
// How Call classifies what happens:
//
//   - 200 with a choice: SUCCEEDED, the result a JSON object {content,
//     finish_reason, model, call_id, usage {prompt_tokens,
//     completion_tokens}, latency_ms}; its tokens and cost (the contract's
//     price times the usage) are the outcome's. finish_reason
//     content_filter: FAILED DETERMINISTIC (refused), paid all the same.
//   - 429: FAILED TRANSIENT, not arrived: a provider refuses a call over
//     its rate before doing any work, so it may be sent again.
//   - 400 naming context_length_exceeded, and any other 4xx: FAILED
//     DETERMINISTIC; asking again gets the same answer.
//   - 408, 5xx: FAILED TRANSIENT, arrived: it may have been billed, so the
//     execution plane leaves it unknown rather than send it again.
//   - no answer after the request was sent (a timeout): UNKNOWN.
//   - not sent at all: FAILED TRANSIENT, not arrived.
func NewModel(client *http.Client) Adapter {
	if client == nil {
		client = &http.Client{}
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &modelAdapter{client: &c, now: time.Now}
}

// chatMessage is one message of a conversation, as the API takes it.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatParams are the parameters of an llm.chat action.
type chatParams struct {
	Messages  []chatMessage `json:"messages"`
	MaxTokens int64         `json:"max_tokens"`
}

// Call implements Adapter.
func (a *modelAdapter) Call(ctx context.Context, req Request) Result {
	m := req.Tool.GetModel()
	if m == nil {
		return deterministic("tool %s is not a model", toolName(req.Tool))
	}
	if req.OpKey == "" {
		return deterministic("no op_key: a tool is never called without one")
	}
	body, err := chatBody(m, req.Body)
	if err != nil {
		return deterministic("%v", err)
	}
	hreq, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(m.BaseUrl, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return deterministic("build request to %s: %v", m.BaseUrl, err)
	}
	hreq.GetBody = nil // never resent by the transport: a call is paid
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set(HeaderIdempotencyKey, req.OpKey)
	hreq.Header.Set(HeaderActionID, req.ActionID)
	hreq.Header.Set(HeaderTaskID, req.TaskID)
	if m.KeyFile != "" {
		key, err := os.ReadFile(m.KeyFile)
		if err != nil {
			return deterministic("read the model's key file: %v", err)
		}
		hreq.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(key)))
	}
	ctx, cancel := context.WithTimeout(ctx, toolTimeout(req.Tool))
	defer cancel()
	var sent sendTracker
	hreq = hreq.WithContext(httptrace.WithClientTrace(ctx, sent.trace()))
	start := a.now()
	resp, err := a.client.Do(hreq)
	if refusal := (*egress.Refusal)(nil); errors.As(err, &refusal) {
		return deterministic("refused by the egress rule for tenants' tools: %v", refusal)
	}
	if err != nil {
		if sent.maybeSent() {
			r := unknown("no answer from the model after the request was sent: %v; it may have been paid for, so it is not sent again", err)
			r.Arrived, r.ModelFailure = true, ModelTimeout
			return r
		}
		return transient("request not sent: %v", err)
	}
	defer closeBody(resp.Body)
	return modelAnswer(m, resp, a.now().Sub(start))
}

// chatBody is the chat-completions request for the action's canonical
// request: its params' messages, and max_tokens within the contract's.
func chatBody(m *stewardv1.ModelEndpoint, canonical []byte) ([]byte, error) {
	var req struct {
		Params chatParams `json:"params"`
	}
	if err := json.Unmarshal(canonical, &req); err != nil {
		return nil, fmt.Errorf("params: %v", err)
	}
	p := req.Params
	if len(p.Messages) == 0 {
		return nil, errors.New("params.messages is empty: a model call sends at least one message")
	}
	switch n := p.MaxTokens; {
	case n < 0 || n > m.MaxTokens:
		return nil, fmt.Errorf("params.max_tokens is %d; the tool allows 1 to %d", n, m.MaxTokens)
	case n == 0:
		p.MaxTokens = m.MaxTokens
	}
	return json.Marshal(map[string]any{"model": m.Model, "messages": p.Messages, "max_tokens": p.MaxTokens})
}

// chatAnswer is the part of a chat completion Steward reads.
type chatAnswer struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message      chatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ModelResult is the result of a model call, as stored and read back.
type ModelResult struct {
	Content      string     `json:"content"`
	FinishReason string     `json:"finish_reason"`
	Model        string     `json:"model"`
	CallID       string     `json:"call_id"`
	Usage        ModelUsage `json:"usage"`
	LatencyMS    int64      `json:"latency_ms"`
}

// ModelUsage is what a call spent, as the model reported it.
type ModelUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// modelAnswer classifies the model's answer.
func modelAnswer(m *stewardv1.ModelEndpoint, resp *http.Response, latency time.Duration) Result {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxModelAnswer+1))
	if resp.StatusCode == http.StatusOK && (err != nil || len(raw) > maxModelAnswer) {
		if err == nil {
			err = fmt.Errorf("it is longer than %d bytes", maxModelAnswer)
		}
		r := unknown("the model answered 200 but its answer could not be read whole: %v; it was paid for, so it is not sent again", err)
		r.Arrived, r.ModelFailure = true, ModelUnreadable
		return r
	}
	var ans chatAnswer
	_ = json.Unmarshal(raw, &ans)
	reason := ans.Error.Message
	if reason == "" {
		reason = resp.Status
	}
	switch c := resp.StatusCode; {
	case c == http.StatusTooManyRequests:
		r := transient("the model's provider is rate limiting: %s", reason)
		r.ModelFailure = ModelRateLimited // refused before any work: Arrived stays false
		return r
	case c == http.StatusRequestTimeout || c >= 500:
		r := transient("the model's provider answered %s: %s", resp.Status, reason)
		r.Arrived, r.ModelFailure = true, ModelServerError
		return r
	case c == http.StatusBadRequest && (ans.Error.Code == "context_length_exceeded" || strings.Contains(reason, "context length")):
		r := deterministic("the conversation is longer than the model's context: %s", reason)
		r.Arrived, r.ModelFailure = true, ModelContextLength
		return r
	case c != http.StatusOK:
		r := deterministic("the model's provider refused the call (%s): %s", resp.Status, reason)
		r.Arrived, r.ModelFailure = true, ModelRefused
		return r
	}
	return chatResult(m, ans, latency)
}

// chatResult is a 200's result, charged as the model reports its usage.
func chatResult(m *stewardv1.ModelEndpoint, ans chatAnswer, latency time.Duration) Result {
	u := ans.Usage
	// A usage past reason — negative, or more than any call could be —
	// is held to what can be recorded: the most a call may count, never
	// less than nothing, so that the task's totals take it.
	u.PromptTokens, u.CompletionTokens = min(max(u.PromptTokens, 0), maxReportedTokens), min(max(u.CompletionTokens, 0), maxReportedTokens)
	paid := func(r Result) Result {
		r.Arrived = true
		r.Tokens = u.PromptTokens + u.CompletionTokens
		r.CostMicros = ceilDiv(addCapped(mulCapped(u.PromptTokens, m.InputMicrosPer_1K), mulCapped(u.CompletionTokens, m.OutputMicrosPer_1K)), 1000)
		return r
	}
	if len(ans.Choices) == 0 || ans.Usage.PromptTokens < 0 || ans.Usage.CompletionTokens < 0 {
		return paid(deterministic("the model answered without a choice or with a negative usage"))
	}
	choice := ans.Choices[0]
	if choice.FinishReason == "content_filter" {
		r := paid(deterministic("the model refused to answer (finish_reason content_filter)"))
		r.ModelFailure = ModelRefused
		return r
	}
	body, err := json.Marshal(ModelResult{Content: choice.Message.Content, FinishReason: choice.FinishReason, Model: ans.Model,
		CallID: ans.ID, Usage: ModelUsage(u), LatencyMS: latency.Milliseconds()})
	if err != nil {
		return paid(deterministic("encode the model's answer: %v", err))
	}
	return paid(Result{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Body: body})
}

// mulCapped and addCapped are a*b and a+b of non-negative numbers, at most
// math.MaxInt64: a price past reason costs the most there is, not a
// negative amount.
func mulCapped(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func addCapped(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func ceilDiv(n, d int64) int64 {
	if n <= 0 {
		return 0
	}
	q := n / d
	if n%d != 0 {
		q++
	}
	return q
}

// Status implements Adapter: a model offers no status query.
func (a *modelAdapter) Status(context.Context, Request) (StatusAnswer, error) {
	return StatusAnswer{}, ErrNoStatusQuery
}
