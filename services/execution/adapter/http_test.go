package adapter_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/adapter"
	"google.golang.org/protobuf/types/known/durationpb"
)

const canonicalBody = `{"params":{"amount":5},"target":"acct-1","task_id":"task-1","tool":"payments.charge","tool_version":"1"}`

func httpRequest(tool *stewardv1.ToolContract, opKey string) adapter.Request {
	return adapter.Request{TaskID: "task-1", ActionID: "act-1", OpKey: opKey, Tool: tool, Body: []byte(canonicalBody)}
}

var (
	succeededStatus = stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
	failedStatus    = stewardv1.ActionStatus_ACTION_STATUS_FAILED
	unknownStatus   = stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN
	transientClass  = stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT
	determClass     = stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC
)

func TestHTTPCallClassifiesAnswers(t *testing.T) {
	tests := []struct {
		name       string
		answer     stewardtest.Answer
		status     stewardv1.ActionStatus
		class      stewardv1.FailureClass
		inFlight   bool
		body       string // exact result, when set
		reason     string // a part of the reason, when set
		executions int    // how often the tool acted on the key
	}{
		{name: "200 with the result", answer: stewardtest.OK, status: succeededStatus,
			body: `{"echo":{"amount":5},"execution":1,"key":"op-1","ok":true,"task":"task-1"}`, executions: 1},
		{name: "204 with no body", answer: stewardtest.Answer{Code: http.StatusNoContent, NoBody: true}, status: succeededStatus, body: `null`},
		{name: "200 with a body that is not JSON", answer: stewardtest.Answer{Body: "<html>ok</html>"}, status: failedStatus, class: determClass, reason: "not JSON"},
		{name: "200 with a result over the cap", answer: stewardtest.Answer{Body: fmt.Sprintf("%q", strings.Repeat("x", adapter.MaxResultBytes))},
			status: failedStatus, class: determClass, reason: "result too large"},
		{name: "409 in progress", answer: stewardtest.Answer{Work: true, Code: http.StatusConflict, Body: `{"state":"in_progress"}`},
			status: unknownStatus, inFlight: true, executions: 1},
		{name: "409 conflict", answer: stewardtest.Answer{Code: http.StatusConflict, Body: `{"message":"conflict"}`}, status: unknownStatus, reason: "conflict"},
		{name: "400", answer: stewardtest.Answer{Code: http.StatusBadRequest, Body: `{"message":"amount must be positive"}`},
			status: failedStatus, class: determClass, reason: "amount must be positive"},
		{name: "404 with a nested message", answer: stewardtest.Answer{Code: http.StatusNotFound, Body: `{"error":{"message":"no such account"}}`},
			status: failedStatus, class: determClass, reason: "no such account"},
		{name: "422 with no body", answer: stewardtest.Answer{Code: http.StatusUnprocessableEntity, NoBody: true},
			status: failedStatus, class: determClass, reason: "422 Unprocessable Entity"},
		{name: "408", answer: stewardtest.Answer{Code: http.StatusRequestTimeout, NoBody: true}, status: failedStatus, class: transientClass, reason: "408"},
		{name: "429", answer: stewardtest.Answer{Code: http.StatusTooManyRequests, Body: `{"message":"slow down"}`},
			status: failedStatus, class: transientClass, reason: "slow down"},
		{name: "503", answer: stewardtest.Answer{Code: http.StatusServiceUnavailable, NoBody: true}, status: failedStatus, class: transientClass, reason: "503"},
		{name: "307 elsewhere", answer: stewardtest.Answer{Code: http.StatusTemporaryRedirect, Header: http.Header{"Location": {"/elsewhere"}}, NoBody: true},
			status: failedStatus, class: determClass, reason: "307"},
		{name: "work, then never answer", answer: stewardtest.Late, status: unknownStatus, reason: "after the request was sent", executions: 1},
		{name: "work, then drop the connection", answer: stewardtest.Answer{Work: true, Drop: true},
			status: unknownStatus, reason: "after the request was sent", executions: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := stewardtest.StartTool(t).Always("/call", tt.answer)
			a := adapter.NewHTTP(ts.Client())
			timeout := 10 * time.Second
			if tt.answer.Hold == stewardtest.HoldForever {
				timeout = 300 * time.Millisecond
			}
			tool := httpTool(ts.URL+"/call", "", timeout)

			got := a.Call(context.Background(), httpRequest(tool, "op-1"))

			if got.Status != tt.status || got.FailureClass != tt.class || got.InFlight != tt.inFlight {
				t.Fatalf("got %v/%v inFlight=%v (%q), want %v/%v inFlight=%v",
					got.Status, got.FailureClass, got.InFlight, got.Reason, tt.status, tt.class, tt.inFlight)
			}
			if tt.body != "" && string(got.Body) != tt.body {
				t.Errorf("body = %s, want %s", got.Body, tt.body)
			}
			if tt.status != succeededStatus && got.Body != nil {
				t.Errorf("body on a %v result: %.100s", got.Status, got.Body)
			}
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", got.Reason, tt.reason)
			}
			if n := ts.Executions("op-1"); n != tt.executions {
				t.Errorf("tool acted %d times on the key, want %d", n, tt.executions)
			}
			if n := ts.CallsTo("/elsewhere"); n != 0 {
				t.Errorf("the redirect was followed %d times", n)
			}
		})
	}
}

func TestHTTPCallSendsTheProtocolHeaders(t *testing.T) {
	ts := stewardtest.StartTool(t)
	a := adapter.NewHTTP(ts.Client())

	got := a.Call(context.Background(), httpRequest(httpTool(ts.URL+"/call", "", 0), "op-42"))
	if got.Status != succeededStatus {
		t.Fatalf("status = %v (%s)", got.Status, got.Reason)
	}

	reqs := ts.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the tool got %d requests, want 1", len(reqs))
	}
	last := reqs[0]
	if last.Method != http.MethodPost {
		t.Errorf("method = %s, want POST", last.Method)
	}
	if string(last.Body) != canonicalBody {
		t.Errorf("body = %s, want the canonical request", last.Body)
	}
	for name, want := range map[string]string{
		"Content-Type":               "application/json",
		adapter.HeaderIdempotencyKey: "op-42",
		adapter.HeaderActionID:       "act-1",
		adapter.HeaderTaskID:         "task-1",
	} {
		if got := last.Header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
}

func TestHTTPCallRepeatedKeyGetsFirstResult(t *testing.T) {
	ts := stewardtest.StartTool(t)
	a := adapter.NewHTTP(ts.Client())
	req := httpRequest(httpTool(ts.URL+"/call", "", 0), "op-7")

	first := a.Call(context.Background(), req)
	second := a.Call(context.Background(), req)

	if first.Status != succeededStatus || second.Status != succeededStatus {
		t.Fatalf("statuses = %v, %v", first.Status, second.Status)
	}
	if string(first.Body) != string(second.Body) {
		t.Errorf("repeat got %s, first got %s", second.Body, first.Body)
	}
	if n := ts.Executions("op-7"); n != 1 {
		t.Errorf("tool acted %d times, want 1", n)
	}
}

// Each of these fails before the request is written, so nothing can have
// happened and trying again is safe.
func TestHTTPCallNotSentIsTransient(t *testing.T) {
	closed := stewardtest.StartTool(t)
	closedURL := closed.URL + "/call"
	closed.Close()

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	live := stewardtest.StartTool(t)

	tests := []struct {
		name string
		ctx  context.Context
		url  string
	}{
		{"connection refused", context.Background(), closedURL},
		{"DNS failure", context.Background(), "http://steward-adapter-test.invalid/call"},
		{"cancelled before sending", cancelled, live.URL + "/call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := adapter.NewHTTP(nil)
			got := a.Call(tt.ctx, httpRequest(httpTool(tt.url, "", 5*time.Second), "op-1"))
			if got.Status != failedStatus || got.FailureClass != transientClass {
				t.Fatalf("got %v/%v (%s), want FAILED/TRANSIENT", got.Status, got.FailureClass, got.Reason)
			}
			if !strings.Contains(got.Reason, "not sent") {
				t.Errorf("reason = %q, want it to say the request was not sent", got.Reason)
			}
		})
	}
	if n := live.Calls(); n != 0 {
		t.Errorf("live tool got %d calls after a cancelled call", n)
	}
}

func TestHTTPCallRefusesBadRequests(t *testing.T) {
	ts := stewardtest.StartTool(t)
	a := adapter.NewHTTP(ts.Client())
	tests := []struct {
		name string
		req  adapter.Request
	}{
		{"no op_key", httpRequest(httpTool(ts.URL+"/call", "", 0), "")},
		{"no url", httpRequest(httpTool("", "", 0), "op-1")},
		{"builtin tool", httpRequest(builtinTool(adapter.KindNoop), "op-1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := a.Call(context.Background(), tt.req)
			if got.Status != failedStatus || got.FailureClass != determClass {
				t.Fatalf("got %v/%v (%s), want FAILED/DETERMINISTIC", got.Status, got.FailureClass, got.Reason)
			}
		})
	}
	if n := ts.Calls(); n != 0 {
		t.Errorf("a refused call reached the tool %d times", n)
	}
}

// httpTool is a contract for a tool's endpoints.
func httpTool(url, statusURL string, timeout time.Duration) *stewardv1.ToolContract {
	tool := &stewardv1.ToolContract{
		Name:    "payments.charge",
		Version: "1",
		Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{
			Url:       url,
			StatusUrl: statusURL,
		}},
	}
	if timeout > 0 {
		tool.Timeout = durationpb.New(timeout)
	}
	return tool
}
