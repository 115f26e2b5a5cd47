package adapter_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
)

// answer is how the test tool server answers POST /call.
type answer string

const (
	answerOK          answer = "200 with the result; a repeated key gets the first result"
	answerEmpty       answer = "204 with no body"
	answerNotJSON     answer = "200 with a body that is not JSON"
	answerHuge        answer = "200 with a result over the cap"
	answerInFlight    answer = `409 {"state":"in_progress"}`
	answerConflict    answer = `409 {"message":"conflict"}`
	answerBadRequest  answer = `400 {"message":"amount must be positive"}`
	answerNotFound    answer = `404 {"error":{"message":"no such account"}}`
	answerUnprocessed answer = "422 with no body"
	answerTimeout     answer = "408"
	answerTooMany     answer = "429"
	answerUnavailable answer = "503"
	answerRedirect    answer = "307 to /elsewhere"
	answerHang        answer = "read the body, then never answer"
	answerDrop        answer = "read the body, then drop the connection"
)

// toolServer is a real HTTP tool for tests. It counts executions per
// Idempotency-Key — a request it acted on — and remembers the last request.
type toolServer struct {
	*httptest.Server

	mu         sync.Mutex
	answer     answer
	executions map[string]int
	results    map[string]string
	lastHeader http.Header
	lastBody   []byte
	lastMethod string

	statusCode   int
	statusBody   string
	statusOpKeys []string
	statusQuery  []string
}

func startToolServer(t *testing.T, a answer) *toolServer {
	t.Helper()
	ts := &toolServer{answer: a, executions: map[string]int{}, results: map[string]string{}, statusCode: http.StatusOK}
	mux := http.NewServeMux()
	mux.HandleFunc("/call", ts.call)
	mux.HandleFunc("/status", ts.status)
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		ts.mu.Lock()
		ts.executions["redirected"]++
		ts.mu.Unlock()
		fmt.Fprint(w, `{"redirected":true}`)
	})
	ts.Server = httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func (ts *toolServer) call(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := r.Header.Get(adapter.HeaderIdempotencyKey)
	ts.mu.Lock()
	ts.lastHeader = r.Header.Clone()
	ts.lastBody = body
	ts.lastMethod = r.Method
	a := ts.answer
	switch a {
	case answerOK, answerInFlight, answerHang, answerDrop:
		if _, done := ts.results[key]; !done {
			ts.executions[key]++
		}
	}
	if a == answerOK && ts.results[key] == "" {
		ts.results[key] = fmt.Sprintf(`{"op_key":%q,"execution":%d}`, key, ts.executions[key])
	}
	result := ts.results[key]
	ts.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	switch a {
	case answerOK:
		fmt.Fprint(w, result)
	case answerEmpty:
		w.WriteHeader(http.StatusNoContent)
	case answerNotJSON:
		fmt.Fprint(w, "<html>ok</html>")
	case answerHuge:
		fmt.Fprintf(w, "%q", strings.Repeat("x", adapter.MaxResultBytes))
	case answerInFlight:
		w.WriteHeader(http.StatusConflict)
		fmt.Fprint(w, `{"state":"in_progress"}`)
	case answerConflict:
		w.WriteHeader(http.StatusConflict)
		fmt.Fprint(w, `{"message":"conflict"}`)
	case answerBadRequest:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"message":"amount must be positive"}`)
	case answerNotFound:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"message":"no such account"}}`)
	case answerUnprocessed:
		w.WriteHeader(http.StatusUnprocessableEntity)
	case answerTimeout:
		w.WriteHeader(http.StatusRequestTimeout)
	case answerTooMany:
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"message":"slow down"}`)
	case answerUnavailable:
		w.WriteHeader(http.StatusServiceUnavailable)
	case answerRedirect:
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	case answerHang:
		<-r.Context().Done() // the client gave up and closed the connection
	case answerDrop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

func (ts *toolServer) status(w http.ResponseWriter, r *http.Request) {
	ts.mu.Lock()
	ts.statusOpKeys = append(ts.statusOpKeys, r.URL.Query().Get("op_key"))
	ts.statusQuery = append(ts.statusQuery, r.URL.RawQuery)
	code, body := ts.statusCode, ts.statusBody
	ts.mu.Unlock()
	w.WriteHeader(code)
	fmt.Fprint(w, body)
}

func (ts *toolServer) executionsOf(key string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.executions[key]
}

// httpTool is a contract for the tool server's endpoints.
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
