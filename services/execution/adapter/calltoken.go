package adapter

import (
	"net/http"
	"time"

	"github.com/steward-run/steward/pkg/calltoken"
)

// HTTPOption sets up the HTTP adapter.
type HTTPOption func(*httpAdapter)

// WithCallSigner signs every call and status query with s: a token in
// the Steward-Call-Token header that the tool can check with the
// published key (docs/calltokens.md). now is the clock (time.Now when
// nil).
func WithCallSigner(s *calltoken.Signer, now func() time.Time) HTTPOption {
	return func(a *httpAdapter) {
		if now == nil {
			now = time.Now
		}
		a.signer, a.now = s, now
	}
}

// sign puts the token for hreq, made for req, in its header; nothing when
// the adapter has no signer. A token lasts the call's timeout and
// calltoken.Skew: a call still running after that has timed out anyway.
func (a *httpAdapter) sign(hreq *http.Request, req Request) error {
	if a.signer == nil {
		return nil
	}
	now := a.now()
	c := calltoken.Claims{
		Audience: req.Tool.GetHttp().GetUrl(), Method: hreq.Method,
		TaskID: req.TaskID, ActionID: req.ActionID, OpKey: req.OpKey,
		Tool: req.Tool.GetName(), ToolVersion: req.Tool.GetVersion(),
		IssuedAt: now.Unix(), ExpiresAt: now.Add(toolTimeout(req.Tool) + calltoken.Skew).Unix(),
	}
	if hreq.Method != http.MethodGet {
		c.Attempt, c.RequestHash, c.BodyHash = req.Attempt, req.RequestHash, calltoken.BodyHash(req.Body)
	}
	token, err := a.signer.Sign(c)
	if err != nil {
		return err
	}
	hreq.Header.Set(calltoken.Header, token)
	return nil
}
