// Package calltool is the example of docs/calltokens.md: a tool that
// takes calls from Steward only. e2e/calltoken_test.go runs it against the
// real binary, and checks that the page shows this code.
package calltool

import (
	"context"
	"net/http"

	"github.com/steward-run/steward/pkg/calltoken"
)

// Protect serves tool only the calls and status queries that Steward, at
// stewardURL, signed for toolURL — the tool's call URL exactly as its
// contract registers it — each once. Anything else is answered 401.
func Protect(ctx context.Context, stewardURL, toolURL string, tool http.Handler) (http.Handler, error) {
	keys, err := calltoken.FetchKeys(ctx, nil, stewardURL+calltoken.WellKnownPath)
	if err != nil {
		return nil, err
	}
	v := calltoken.NewVerifier(keys, toolURL, calltoken.WithReplayCache(calltoken.NewMemoryReplayCache()))
	return v.Handler(tool), nil
}
