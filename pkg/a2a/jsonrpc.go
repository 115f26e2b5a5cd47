package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// JSON-RPC 2.0 and A2A error codes (A2A 0.3 §8).
const (
	codeParseError       = -32700
	codeInvalidRequest   = -32600
	codeMethodNotFound   = -32601
	codeInvalidParams    = -32602
	codeInternal         = -32603
	codeServerError      = -32000 // refused by Steward for a reason A2A has no code for
	codeTaskNotFound     = -32001
	codeNotCancelable    = -32002
	codePushNotSupported = -32003
	codeUnsupported      = -32004
	codeNoExtendedCard   = -32007
)

// rpcError is a JSON-RPC error object. Data names the field of bad params.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
	// status, when set, answers with this HTTP status instead of 200:
	// 401 for a caller the API did not authenticate.
	status int
}

func (e *rpcError) Error() string { return e.Message }

// wire is e as sent: data.error repeats the message, where a2a-go's
// client reads an error's detail from.
func (e *rpcError) wire() *rpcError {
	if e == nil {
		return nil
	}
	w := *e
	w.Data = map[string]any{"error": e.Message}
	for k, v := range e.Data {
		w.Data[k] = v
	}
	return &w
}

// invalidParams refuses a request, naming the field of params at fault.
func invalidParams(field, format string, args ...any) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: field + ": " + fmt.Sprintf(format, args...), Data: map[string]any{"field": field}}
}

// envelope is a JSON-RPC request.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// decode reads one request strictly: a body of at most MaxRequestBytes
// holding one JSON object with no field JSON-RPC does not define, version
// "2.0", a method, and an id that is a string or a number (A2A methods all
// answer, so a notification is refused).
func decode(w http.ResponseWriter, r *http.Request) (envelope, *rpcError) {
	var req envelope
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return req, &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf("the request is larger than %d bytes", MaxRequestBytes)}
		}
		return req, &rpcError{Code: codeParseError, Message: "reading the request: " + err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return req, &rpcError{Code: codeParseError, Message: "the request is not JSON: " + err.Error()}
		}
		return req, &rpcError{Code: codeInvalidRequest, Message: "not a JSON-RPC request: " + err.Error()}
	}
	if dec.More() {
		return req, &rpcError{Code: codeInvalidRequest, Message: "one JSON-RPC request per call: batches and trailing data are refused"}
	}
	id := req.ID
	req.ID = nil // answer errors below with a null id, as JSON-RPC says for an unreadable one
	switch {
	case req.JSONRPC != "2.0":
		return req, &rpcError{Code: codeInvalidRequest, Message: `jsonrpc: must be "2.0"`}
	case len(id) == 0 || bytes.Equal(id, []byte("null")):
		return req, &rpcError{Code: codeInvalidRequest, Message: "id: is required: every A2A method answers"}
	case id[0] != '"' && (id[0] < '0' || id[0] > '9') && id[0] != '-':
		return req, &rpcError{Code: codeInvalidRequest, Message: "id: must be a string or a number"}
	case req.Method == "":
		return req, &rpcError{Code: codeInvalidRequest, Message: "method: is required"}
	}
	req.ID = id
	return req, nil
}

// params decodes a request's params into v; params that do not decode are
// refused as InvalidParams.
func params(raw json.RawMessage, v any) *rpcError {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return invalidParams("params", "is required")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidParams("params", "%v", err)
	}
	return nil
}

// refused answers req with err: HTTP 200 and a JSON-RPC error, or the
// error's own HTTP status (401) with the same body.
func refused(w http.ResponseWriter, id json.RawMessage, err *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	if err.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="steward"`)
	}
	if err.status != 0 {
		w.WriteHeader(err.status)
	}
	writeJSON(w, response{JSONRPC: "2.0", ID: nullID(id), Error: err.wire()})
}

func answer(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	writeJSON(w, response{JSONRPC: "2.0", ID: id, Result: result})
}

func nullID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

func writeJSON(w io.Writer, v any) {
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes one stream's events as Server-Sent Events, each a JSON-RPC
// response to the request that opened it.
type sse struct {
	mu sync.Mutex // send and the keepalive write to one response
	w  http.ResponseWriter
	id json.RawMessage
}

func startSSE(w http.ResponseWriter, id json.RawMessage) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, id: id}
}

func (s *sse) send(result any, rerr *rpcError) error {
	data, err := json.Marshal(response{JSONRPC: "2.0", ID: s.id, Result: result, Error: rerr.wire()})
	if err != nil {
		return err
	}
	return s.write("data: %s\n\n", data)
}

func (s *sse) write(format string, args ...any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.w, format, args...); err != nil {
		return err
	}
	return http.NewResponseController(s.w).Flush()
}

// keepAlive writes an SSE comment, which clients ignore, every interval
// until the returned stop is called: a task waiting hours for a person
// sends nothing else, and proxies and load balancers close a connection
// idle for a minute or so.
func (s *sse) keepAlive(interval time.Duration) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if s.write(": keepalive\n\n") != nil {
					return // the client left; the stream's own send will say so
				}
			}
		}
	}()
	return func() { close(done); <-ended }
}
