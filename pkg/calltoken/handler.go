package calltoken

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxBody bounds the body Handler reads to verify.
const DefaultMaxBody = 16 << 20

// The headers of the HTTP tool protocol that a token's claims are
// checked against.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerActionID       = "Steward-Action-Id"
	headerTaskID         = "Steward-Task-Id"
)

type claimsKey struct{}

// FromContext returns the claims Handler verified for the request.
func FromContext(ctx context.Context) (*Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(*Claims)
	return c, ok
}

// Handler serves next only requests that carry a token Verify accepts
// and whose headers say what the token does: the op_key (Idempotency-Key
// of a POST, op_key query parameter of a GET), the action and the task.
// Anything else is answered 401 with {"message": why}, which Steward
// records as a deterministic failure with that reason. next reads the
// body as sent and finds the claims with FromContext.
func (v *Verifier) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := v.verifyRequest(r)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"message": err.Error()})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimsKey{}, c)))
	})
}

// verifyRequest reads r's body (putting it back for next) and checks r's
// token against it and r's headers.
func (v *Verifier) verifyRequest(r *http.Request) (*Claims, error) {
	token := r.Header.Get(Header)
	if token == "" {
		return nil, fmt.Errorf("no %s header: this tool takes calls from Steward only", Header)
	}
	var body []byte
	opKey := r.URL.Query().Get("op_key")
	if r.Method != http.MethodGet {
		b, err := io.ReadAll(io.LimitReader(r.Body, DefaultMaxBody+1))
		if err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		if len(b) > DefaultMaxBody {
			return nil, fmt.Errorf("body larger than %d bytes", DefaultMaxBody)
		}
		body, opKey = b, r.Header.Get(headerIdempotencyKey)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	c, err := v.Verify(token, r.Method, body)
	if err != nil {
		return nil, err
	}
	switch {
	case c.OpKey != opKey:
		return nil, fmt.Errorf("call token for op_key %q, not %q", c.OpKey, opKey)
	case c.ActionID != r.Header.Get(headerActionID), c.TaskID != r.Header.Get(headerTaskID):
		return nil, fmt.Errorf("call token for action %s of task %s, not the headers'", c.ActionID, c.TaskID)
	}
	return c, nil
}
