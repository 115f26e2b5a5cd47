package stewardtest

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// FakeModel is a real HTTP server that speaks the OpenAI-compatible chat
// completions API as far as Steward's llm.chat tools use it, and counts
// what it is asked: every request, and the requests of each
// Idempotency-Key (one per action). How it answers each is the test's.
type FakeModel struct {
	URL string // the API's root, for a model tool's base_url

	mu       sync.Mutex
	requests int
	byKey    map[string]int
	asked    []FakeModelRequest
	answer   func(n int, req FakeModelRequest) FakeReply
}

// FakeModelRequest is one request the fake took.
type FakeModelRequest struct {
	Key           string // Idempotency-Key
	Authorization string
	Model         string
	MaxTokens     int64
	Messages      []map[string]string
}

// FakeReply is how the fake answers one request.
type FakeReply struct {
	// Status is the HTTP status; 200 when zero.
	Status int
	// For a 200: the answer, its finish reason ("stop" when empty), the
	// model that answered (the one asked when empty), and the usage.
	Content          string
	FinishReason     string
	Model            string
	PromptTokens     int64
	CompletionTokens int64
	// ErrorCode is an error answer's code, such as
	// "context_length_exceeded".
	ErrorCode string
	// Hang holds the request without an answer until the caller gives up.
	Hang bool
}

// StartFakeModel serves a fake model until the test ends. answer gives
// the reply to the nth request (1-based); nil answers every request "ok",
// 10 tokens in and 5 out.
func StartFakeModel(tb testing.TB, answer func(n int, req FakeModelRequest) FakeReply) *FakeModel {
	tb.Helper()
	if answer == nil {
		answer = func(int, FakeModelRequest) FakeReply {
			return FakeReply{Content: "ok", PromptTokens: 10, CompletionTokens: 5}
		}
	}
	f := &FakeModel{byKey: map[string]int{}, answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(srv.Close)
	f.URL = srv.URL + "/v1"
	return f
}

func (f *FakeModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Model     string              `json:"model"`
		MaxTokens int64               `json:"max_tokens"`
		Messages  []map[string]string `json:"messages"`
	}
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &body)
	req := FakeModelRequest{Key: r.Header.Get("Idempotency-Key"), Authorization: r.Header.Get("Authorization"),
		Model: body.Model, MaxTokens: body.MaxTokens, Messages: body.Messages}
	f.mu.Lock()
	f.requests++
	f.byKey[req.Key]++
	f.asked = append(f.asked, req)
	n := f.requests
	f.mu.Unlock()
	reply := f.answer(n, req)
	if reply.Hang {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if reply.Status != 0 && reply.Status != http.StatusOK {
		w.WriteHeader(reply.Status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": reply.ErrorCode, "message": fmt.Sprintf("fake %d %s", reply.Status, reply.ErrorCode)}})
		return
	}
	if reply.FinishReason == "" {
		reply.FinishReason = "stop"
	}
	if reply.Model == "" {
		reply.Model = body.Model
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": reply.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": reply.FinishReason,
			"message": map[string]any{"role": "assistant", "content": reply.Content}}},
		"usage": map[string]any{"prompt_tokens": reply.PromptTokens, "completion_tokens": reply.CompletionTokens,
			"total_tokens": reply.PromptTokens + reply.CompletionTokens},
	})
}

// Requests is how many requests the fake has taken.
func (f *FakeModel) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// ByKey is how many requests each Idempotency-Key sent.
func (f *FakeModel) ByKey() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.byKey)
}

// Asked is every request taken, in order.
func (f *FakeModel) Asked() []FakeModelRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FakeModelRequest(nil), f.asked...)
}
