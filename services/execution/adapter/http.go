package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/calltoken"
	"github.com/steward-run/steward/pkg/egress"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/tracing"
)

const (
	// DefaultTimeout bounds a call to a tool whose contract sets no timeout.
	DefaultTimeout = 30 * time.Second
	// MaxResultBytes is the largest result a tool may return; a larger one
	// fails the call deterministically, since asking again returns the same.
	MaxResultBytes = action.MaxResult
	// maxReasonBody is how much of an error answer is read for its reason.
	maxReasonBody = 64 << 10
)

// The headers of the HTTP tool protocol.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderActionID       = "Steward-Action-Id"
	HeaderTaskID         = "Steward-Task-Id"
	// HeaderCostMicros is how a tool may say what a call cost, in
	// micro-units of the task's currency.
	HeaderCostMicros = "Steward-Cost-Micros"
)

// httpAdapter speaks the HTTP tool protocol (DESIGN.md, "The HTTP tool
// protocol").
type httpAdapter struct {
	client *http.Client
	signer *calltoken.Signer // nil: calls carry no token
	now    func() time.Time
}

// NewHTTP returns an Adapter for tools served over the HTTP tool protocol,
// safe for concurrent use. A nil client means http.DefaultClient. The
// adapter uses a copy of the client that does not follow redirects: a
// redirected POST may be replayed elsewhere or turned into a GET, and what
// comes back would not be the tool's answer to this request. Options
// (WithCallSigner) add to every request.
//
// How Call classifies what happens:
//
//   - 2xx: SUCCEEDED with the body, which must be JSON (an empty body is
//     taken as null) and at most MaxResultBytes; otherwise FAILED
//     DETERMINISTIC, because asking again gets the same answer.
//   - 409 whose JSON body has "state": "in_progress" (the status query's
//     word for it): UNKNOWN with InFlight set. Any other 409 is UNKNOWN
//     without InFlight: the tool reports a conflict on the key, so it may
//     have acted, and only a status query can say.
//   - 408, 429, 5xx: FAILED TRANSIENT, with Arrived set: the tool had
//     the request, and whether it may be sent again is the execution
//     plane's rule (by effect class and idempotency), not the adapter's.
//   - any other 4xx: FAILED DETERMINISTIC; the reason is the body's
//     "message" or "error" (a string, or an object with a "message"),
//     else the status line.
//   - other statuses (3xx): FAILED DETERMINISTIC, outside the protocol.
//   - a connection the egress rule refuses (pkg/egress, a tenant's tool
//     reaching inside): FAILED DETERMINISTIC, never sent.
//   - no response: FAILED TRANSIENT if the request was surely not sent
//     (refused, DNS failure, a deadline before the connection), else
//     UNKNOWN. See sendTracker for how "sent" is decided.
func NewHTTP(client *http.Client, opts ...HTTPOption) Adapter {
	if client == nil {
		client = http.DefaultClient
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	a := &httpAdapter{client: &c}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Call implements Adapter.
func (a *httpAdapter) Call(ctx context.Context, req Request) Result {
	url := req.Tool.GetHttp().GetUrl()
	if url == "" {
		return deterministic("tool %s has no http url", toolName(req.Tool))
	}
	if req.OpKey == "" {
		return deterministic("no op_key: a tool is never called without one")
	}
	ctx, cancel := context.WithTimeout(ctx, toolTimeout(req.Tool))
	defer cancel()

	var sent sendTracker
	ctx = httptrace.WithClientTrace(ctx, sent.trace())
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(req.Body))
	if err != nil {
		return deterministic("build request to %s: %v", url, err)
	}
	// Go's transport resends a request it takes for idempotent (one with an
	// Idempotency-Key header is) when a reused connection fails, and it
	// can only with GetBody. A tool that does not honour its key would do
	// the work twice, and Steward would see only the second answer: the
	// transport never resends; whether to send again is Steward's rule.
	hreq.GetBody = nil
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set(HeaderIdempotencyKey, req.OpKey)
	hreq.Header.Set(HeaderActionID, req.ActionID)
	hreq.Header.Set(HeaderTaskID, req.TaskID)
	tracing.Header(ctx, hreq.Header) // W3C traceparent: the tool's spans join the action's trace
	if err := a.sign(hreq, req); err != nil {
		return transient("request not sent: sign it: %v", err)
	}

	resp, err := a.client.Do(hreq)
	if refusal := (*egress.Refusal)(nil); errors.As(err, &refusal) {
		// Never sent, and sending again is refused again: the tool's
		// contract, or the platform's rule, has to change first.
		return deterministic("refused by the egress rule for tenants' tools: %v", refusal)
	}
	if err != nil {
		if sent.maybeSent() {
			r := unknown("no answer after the request was sent: %v", err)
			r.Arrived = true
			return r
		}
		return transient("request not sent: %v", err)
	}
	defer closeBody(resp.Body)
	res := classify(resp)
	res.Arrived = true // the tool answered: it had the request
	if c, err := strconv.ParseInt(resp.Header.Get(HeaderCostMicros), 10, 64); err == nil && c > 0 {
		res.CostMicros = c
	}
	return res
}

// classify turns a tool's answer into a Result.
func classify(resp *http.Response) Result {
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResultBytes+1))
		switch {
		case err != nil:
			// The tool said yes and the result was lost on the way.
			return unknown("tool answered %s but its result could not be read: %v", resp.Status, err)
		case len(body) > MaxResultBytes:
			return deterministic("result too large: more than %d bytes", MaxResultBytes)
		case len(bytes.TrimSpace(body)) == 0:
			return succeeded([]byte("null"))
		case !json.Valid(body):
			return deterministic("tool answered %s with a result that is not JSON", resp.Status)
		}
		return succeeded(body)
	case code == http.StatusConflict:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxReasonBody))
		if saysInFlight(body) {
			r := unknown("tool says the op_key is still in progress")
			r.InFlight = true
			return r
		}
		return unknown("tool answered %s without saying the key is in progress: %s", resp.Status, reasonOf(resp, body))
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxReasonBody))
		return transient("%s", reasonOf(resp, body))
	case code >= 400:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxReasonBody))
		return deterministic("%s", reasonOf(resp, body))
	default:
		return deterministic("tool answered %s, which the protocol does not define", resp.Status)
	}
}

// saysInFlight reports whether a 409 body is {"state": "in_progress", ...}.
func saysInFlight(body []byte) bool {
	var v struct {
		State string `json:"state"`
	}
	return json.Unmarshal(body, &v) == nil && v.State == StateInProgress
}

// reasonOf is the status line, followed by the body's message when the body
// has one.
func reasonOf(resp *http.Response, body []byte) string {
	var v struct {
		Message string          `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil {
		msg := v.Message
		if msg == "" {
			var s string
			var o struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(v.Error, &s) == nil {
				msg = s
			} else if json.Unmarshal(v.Error, &o) == nil {
				msg = o.Message
			}
		}
		if msg != "" {
			return "HTTP " + resp.Status + ": " + clip(msg)
		}
	}
	return "HTTP " + resp.Status
}

// clip keeps a reason short enough to live in an event.
func clip(s string) string {
	const max = 512
	s = string(bytes.ToValidUTF8([]byte(s), []byte("?")))
	if len(s) <= max {
		return s
	}
	for i := max; i > 0; i-- {
		if s[i]&0xC0 != 0x80 { // the start of a rune
			return s[:i] + "…"
		}
	}
	return ""
}

// closeBody drains a little of what is left so the connection can be
// reused, then closes.
func closeBody(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
	_ = body.Close()
}

// toolTimeout is the tool's own timeout, or DefaultTimeout if it sets none.
func toolTimeout(tool *stewardv1.ToolContract) time.Duration {
	if d := tool.GetTimeout(); d != nil && d.CheckValid() == nil && d.AsDuration() > 0 {
		return d.AsDuration()
	}
	return DefaultTimeout
}

func toolName(tool *stewardv1.ToolContract) string {
	return fmt.Sprintf("%q@%q", tool.GetName(), tool.GetVersion())
}

// sendTracker decides, from httptrace events, whether a failed call may have
// reached the tool. WroteRequest with no error means the whole request was
// written: the tool may be acting on it. A connection that was obtained but
// whose write never reported back is counted as maybe sent too: when a
// deadline fires the transport can return before the write goroutine
// reports, and the bytes may already be on the wire. Only when every write
// that began reported an error (a tool cannot act on part of a body whose
// length it was told) or no connection was ever obtained is the request
// surely unsent. It counts, rather than flags, because the transport may
// retry a request carrying an Idempotency-Key on a fresh connection.
type sendTracker struct {
	mu     sync.Mutex
	conns  int  // connections obtained: writes begun
	writes int  // writes that reported back, with or without an error
	whole  bool // some write finished without an error
}

func (s *sendTracker) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			s.mu.Lock()
			s.writes++
			s.whole = s.whole || info.Err == nil
			s.mu.Unlock()
		},
	}
}

func (s *sendTracker) maybeSent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.whole || s.conns > s.writes
}
