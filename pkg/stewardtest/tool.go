package stewardtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Tool is the reference HTTP tool: a real server that speaks Steward's
// tool protocol. Calls are POSTs to any path, carrying the operation key
// in Idempotency-Key; GET /status?op_key= is the status query, answered
// from the tool's own records (succeeded with the result, or
// not_accepted). Like a well-behaved tool it does the work once per key
// and answers a repeat with the first result, unless told to ignore keys.
//
// What it answers follows a script per path (Script, ScriptPerKey,
// Always); past the script it answers OK. It counts what a test judges
// the runtime by: requests and work per key, the order work was done in,
// and status queries.
type Tool struct {
	*httptest.Server

	mu         sync.Mutex
	scripts    map[string]*script
	ignoreKeys bool
	status     *Answer // overrides the status query's answer
	release    chan struct{}
	released   sync.Once
	gone       chan struct{} // closed at cleanup: held answers end
	gathers    map[string]*gathering

	inFlight map[string]map[string]int // path → key → calls in flight
	together map[string]int            // path → most keys in flight at once

	requests []Request
	perPath  map[string]int
	perKey   map[string]int    // call requests per key
	results  map[string][]byte // each key's first result
	worked   []Work            // work done, in order
	asks     map[string]int    // status queries per key
}

// Answer is how the tool answers one call.
type Answer struct {
	// Work does the call's work (once per key, unless keys are ignored).
	Work bool
	// Code is the HTTP status; 200 when zero.
	Code int
	// Body is the body sent; when empty, the key's result for a 2xx after
	// work, else {"message":"scripted <code>"}. NoBody sends none.
	Body   string
	NoBody bool
	// Header is added to the answer.
	Header http.Header
	// Hold keeps the answer back: until the caller gives up (HoldForever),
	// or until Release (HoldUntilRelease).
	Hold Hold
	// Drop closes the connection instead of answering (after any Hold).
	Drop bool
}

// Hold says how long a held answer waits.
type Hold int

const (
	// HoldNone answers at once.
	HoldNone Hold = iota
	// HoldForever answers only once the caller is gone: the caller times
	// out with no answer, whether or not the work was done.
	HoldForever
	// HoldUntilRelease answers once the test calls Release.
	HoldUntilRelease
)

// The usual answers.
var (
	// OK does the work and answers 200 with the result.
	OK = Answer{Work: true}
	// Late does the work and never answers in time.
	Late = Answer{Work: true, Hold: HoldForever}
	// Silent does no work and never answers in time.
	Silent = Answer{Hold: HoldForever}
)

// Fail answers code without doing the work.
func Fail(code int) Answer { return Answer{Code: code} }

// WorkThenFail does the work, then answers code: the caller cannot tell
// the work was done.
func WorkThenFail(code int) Answer { return Answer{Work: true, Code: code} }

// Work is one piece of work the tool did.
type Work struct {
	Key, Path, TaskID, ActionID, Target string
	Params                              json.RawMessage
}

// Request is one request the tool got, call or status query.
type Request struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
	// At is when the tool got it, by its own clock: how a test measures
	// the rate of calls where they land.
	At time.Time
}

type script struct {
	answers []Answer
	perKey  bool
	always  bool
}

// StartTool starts a reference tool; it stops when the test ends.
func StartTool(tb testing.TB) *Tool {
	tb.Helper()
	t := &Tool{
		scripts: map[string]*script{}, release: make(chan struct{}), gone: make(chan struct{}),
		perPath: map[string]int{}, perKey: map[string]int{}, results: map[string][]byte{}, asks: map[string]int{},
		gathers: map[string]*gathering{}, inFlight: map[string]map[string]int{}, together: map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", t.answerStatus)
	mux.HandleFunc("POST /", t.call)
	t.Server = httptest.NewServer(mux)
	tb.Cleanup(func() {
		close(t.gone)
		t.Close()
	})
	return t
}

// Script sets the answers to path's calls, in the order the calls come.
func (t *Tool) Script(path string, answers ...Answer) *Tool {
	return t.setScript(path, &script{answers: answers})
}

// ScriptPerKey sets the answers to path's calls by how many requests
// carried the same key before: the first request of every key gets
// answers[0], and so on.
func (t *Tool) ScriptPerKey(path string, answers ...Answer) *Tool {
	return t.setScript(path, &script{answers: answers, perKey: true})
}

// Always answers every call to path with a.
func (t *Tool) Always(path string, a Answer) *Tool {
	return t.setScript(path, &script{answers: []Answer{a}, always: true})
}

func (t *Tool) setScript(path string, s *script) *Tool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scripts[path] = s
	return t
}

// IgnoreKeys makes the tool do the work on every call that works, as a
// tool that does not honour idempotency keys would. It still answers with
// the key's first result; Executions and Worked count every time.
func (t *Tool) IgnoreKeys() *Tool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ignoreKeys = true
	return t
}

// AnswerStatus makes every status query get a instead of the truth.
func (t *Tool) AnswerStatus(a Answer) *Tool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.status = &a
	return t
}

// Release lets the answers held until release go, and every such answer
// after it go at once.
func (t *Tool) Release() { t.released.Do(func() { close(t.release) }) }

func (t *Tool) call(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	t.mu.Lock()
	t.requests = append(t.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, At: time.Now()})
	a := t.next(r.URL.Path, key)
	t.perPath[r.URL.Path]++
	t.perKey[key]++
	result, done := t.results[key]
	if a.Work && (!done || t.ignoreKeys) {
		result = t.work(r, key, body)
	}
	gather := t.enter(r.URL.Path, key)
	t.mu.Unlock()
	defer t.leave(r.URL.Path, key)
	t.wait(r, gather)
	t.hold(r, a.Hold)
	if a.Drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
			}
		}
		return
	}
	code := a.Code
	if code == 0 {
		code = http.StatusOK
	}
	out := []byte(a.Body)
	if a.Body == "" && a.Work && code < 300 {
		out = result
	} else if a.Body == "" {
		out, _ = json.Marshal(map[string]string{"message": fmt.Sprintf("scripted %d", code)})
	}
	for k, vs := range a.Header {
		w.Header()[k] = vs
	}
	if a.NoBody {
		w.WriteHeader(code)
		return
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(code)
	_, _ = w.Write(out)
}

// next is the answer for the next call to path with key; t.mu is held.
func (t *Tool) next(path, key string) Answer {
	s := t.scripts[path]
	if s == nil {
		return OK
	}
	if s.always {
		return s.answers[0]
	}
	i := t.perPath[path]
	if s.perKey {
		i = t.perKeyOnPath(path, key)
	}
	if i < len(s.answers) {
		return s.answers[i]
	}
	return OK
}

// perKeyOnPath counts the calls to path that carried key so far.
func (t *Tool) perKeyOnPath(path, key string) int {
	n := 0
	for _, r := range t.requests[:len(t.requests)-1] {
		if r.Path == path && r.Header.Get("Idempotency-Key") == key {
			n++
		}
	}
	return n
}

// work records one piece of work and returns its result; t.mu is held.
func (t *Tool) work(r *http.Request, key string, body []byte) []byte {
	var req struct {
		Target string          `json:"target"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(body, &req)
	w := Work{Key: key, Path: r.URL.Path, TaskID: r.Header.Get("Steward-Task-Id"), ActionID: r.Header.Get("Steward-Action-Id"), Target: req.Target, Params: req.Params}
	t.worked = append(t.worked, w)
	result, _ := json.Marshal(map[string]any{"ok": true, "key": key, "execution": len(t.worked), "echo": req.Params, "task": w.TaskID})
	if _, done := t.results[key]; !done {
		t.results[key] = result
	}
	return t.results[key]
}

// hold waits as h says, or until the caller is gone or the test ends.
func (t *Tool) hold(r *http.Request, h Hold) {
	var release <-chan struct{}
	switch h {
	case HoldNone:
		return
	case HoldUntilRelease:
		release = t.release
	}
	select {
	case <-release:
	case <-r.Context().Done():
	case <-t.gone:
	}
}

// wait waits until ch is closed (a nil ch: not at all), or until the
// caller is gone or the test ends.
func (t *Tool) wait(r *http.Request, ch <-chan struct{}) {
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-r.Context().Done():
	case <-t.gone:
	}
}

func (t *Tool) answerStatus(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("op_key")
	t.mu.Lock()
	t.requests = append(t.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()})
	t.asks[key]++
	result, done := t.results[key]
	override := t.status
	t.mu.Unlock()
	if override != nil {
		code := max(override.Code, http.StatusOK)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, override.Body)
		return
	}
	answer := map[string]any{"state": "not_accepted"}
	if done {
		answer = map[string]any{"state": "succeeded", "result": json.RawMessage(result)}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// Contract returns the contract of an HTTP tool named name served by t on
// path, with a status query: an idempotent write of internal data that
// honours its key, with a 1s timeout and three quick attempts. Tests edit
// what they are about.
func (t *Tool) Contract(name, path string) *stewardv1.ToolContract {
	return &stewardv1.ToolContract{
		Name: name, Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		Timeout:         durationpb.New(time.Second),
		RetryPolicy:     &stewardv1.RetryPolicy{MaxAttempts: 3, InitialBackoff: durationpb.New(50 * time.Millisecond), MaxBackoff: durationpb.New(100 * time.Millisecond)},
		Idempotency:     &stewardv1.IdempotencySupport{HonoursKey: true},
		StatusQuery:     true,
		Endpoint:        &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: t.URL + path, StatusUrl: t.URL + "/status"}},
	}
}
