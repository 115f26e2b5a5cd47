package canary

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Call is one call a stub got.
type Call struct {
	Tool           string          `json:"tool"`
	IdempotencyKey string          `json:"idempotency_key"`
	Body           json.RawMessage `json:"body"`
}

// Stubs serves the definition's stub tools over HTTP on loopback, one
// path per tool, answering each its canned response and recording the
// calls. Safe for concurrent use.
type Stubs struct {
	srv   *http.Server
	base  string
	mu    sync.Mutex
	calls []Call
}

// maxStubBody bounds what a stub reads of a call.
const maxStubBody = 1 << 20

// ServeStubs starts the stubs of d's tools (none if it has none).
func ServeStubs(d *Definition) (*Stubs, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stub tools: %w", err)
	}
	s := &Stubs{base: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	for i, t := range d.Tools {
		if t.Stub != nil {
			mux.Handle("POST /tools/"+d.contracts[i].GetName(), s.answer(d.contracts[i].GetName(), *t.Stub))
		}
	}
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *Stubs) answer(tool string, stub Stub) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxStubBody))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.calls = append(s.calls, Call{Tool: tool, IdempotencyKey: r.Header.Get("Idempotency-Key"), Body: body})
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(cmpOrInt(stub.Status, http.StatusOK))
		answer := []byte(stub.Body)
		if len(answer) == 0 {
			answer = []byte("{}")
		}
		_, _ = w.Write(answer)
	})
}

func cmpOrInt(v, def int) int {
	if v != 0 {
		return v
	}
	return def
}

// Calls are the calls the stubs got, in order.
func (s *Stubs) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Close stops the stubs.
func (s *Stubs) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// Endpoints are d's tool contracts, each pointed at its target: its
// staging URL or its stub. A candidate contract (--against tool=FILE)
// replaces the one of its name, keeping that tool's target.
func (d *Definition) Endpoints(stubs *Stubs, candidate *stewardv1.ToolContract) ([]*stewardv1.ToolContract, error) {
	replaced := candidate == nil
	out := make([]*stewardv1.ToolContract, 0, len(d.contracts))
	for i, k := range d.contracts {
		if candidate != nil && candidate.GetName() == k.GetName() {
			k, replaced = candidate, true
		}
		k = proto.CloneOf(k)
		url := d.Tools[i].Staging
		if d.Tools[i].Stub != nil {
			url = stubs.base + "/tools/" + k.GetName()
		}
		k.Endpoint = &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: url}}
		out = append(out, k)
	}
	if !replaced {
		return nil, errors.New("the candidate tool " + candidate.GetName() + " is none of the definition's tools")
	}
	return out, nil
}
