package app

import (
	"net/http"
	"os"
	"strings"
)

// TokenEnv names the environment variable the client commands (audit,
// receipt) take a bearer token from when --token is not given: a token in
// the environment does not show in process lists.
const TokenEnv = "STEWARD_TOKEN"

// serverURL turns an --addr into a base URL.
func serverURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "http://" + addr
}

// httpClient is the client commands' HTTP client: it presents the bearer
// token, if there is one, to a server started with --auth.
func httpClient(token string) *http.Client {
	if token == "" {
		token = os.Getenv(TokenEnv)
	}
	if token == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
