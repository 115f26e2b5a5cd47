package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/steward-run/steward/pkg/tracing"
)

// Status implements Adapter: GET {status_url}?op_key={op_key}, expecting
// 200 with {"state": …, "result": …, "reason": …}. Anything else — another
// status, a body that is not that JSON, a state outside the four — is an
// error, not an answer, because acting on a misread answer could dispatch
// twice.
func (a *httpAdapter) Status(ctx context.Context, req Request) (StatusAnswer, error) {
	ep := req.Tool.GetHttp()
	if ep == nil {
		return StatusAnswer{}, fmt.Errorf("adapter: tool %s has no http endpoint", toolName(req.Tool))
	}
	if ep.GetStatusUrl() == "" {
		return StatusAnswer{}, ErrNoStatusQuery
	}
	if req.OpKey == "" {
		return StatusAnswer{}, errors.New("adapter: status query without an op_key")
	}
	u, err := url.Parse(ep.GetStatusUrl())
	if err != nil {
		return StatusAnswer{}, fmt.Errorf("adapter: status url: %w", err)
	}
	q := u.Query()
	q.Set("op_key", req.OpKey)
	u.RawQuery = q.Encode()

	ctx, cancel := context.WithTimeout(ctx, toolTimeout(req.Tool))
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return StatusAnswer{}, fmt.Errorf("adapter: status query: %w", err)
	}
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set(HeaderActionID, req.ActionID)
	hreq.Header.Set(HeaderTaskID, req.TaskID)
	tracing.Header(ctx, hreq.Header)
	if err := a.sign(hreq, req); err != nil {
		return StatusAnswer{}, fmt.Errorf("adapter: status query: sign it: %w", err)
	}

	resp, err := a.client.Do(hreq)
	if err != nil {
		return StatusAnswer{}, fmt.Errorf("adapter: status query: %w", err)
	}
	defer closeBody(resp.Body)
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxReasonBody))
		return StatusAnswer{}, fmt.Errorf("adapter: status query: %s", reasonOf(resp, body))
	}
	// The answer carries a result, so it may be as large as one.
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResultBytes+maxReasonBody+1))
	if err != nil {
		return StatusAnswer{}, fmt.Errorf("adapter: status query: read answer: %w", err)
	}
	if len(body) > MaxResultBytes+maxReasonBody {
		return StatusAnswer{}, errors.New("adapter: status query: answer too large")
	}
	return parseStatusAnswer(body)
}

// parseStatusAnswer reads {"state": …, "result": …, "reason": …}.
func parseStatusAnswer(body []byte) (StatusAnswer, error) {
	var v struct {
		State  string          `json:"state"`
		Result json.RawMessage `json:"result"`
		Reason string          `json:"reason"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return StatusAnswer{}, fmt.Errorf("adapter: status query: answer is not {state, result, reason}: %w", err)
	}
	if !validState(v.State) {
		return StatusAnswer{}, fmt.Errorf("adapter: status query: state %q is not one of %s, %s, %s, %s",
			v.State, StateSucceeded, StateFailed, StateInProgress, StateNotAccepted)
	}
	ans := StatusAnswer{State: v.State, Reason: v.Reason}
	if len(v.Result) > 0 && string(v.Result) != "null" {
		ans.Result = v.Result
	}
	return ans, nil
}
