package adapter

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolreg"
)

// pinned checks that the server still describes m's tool as imported: the
// digest of its listing is the contract's (tool poisoning: a server that
// rewrites a tool's description or schema after it was approved for use).
// The listing is cached for the adapter's ttl. false, with the Result to
// return, when the call must not be sent.
func (a *mcpAdapter) pinned(ctx context.Context, s *mcp.ClientSession, m *stewardv1.McpEndpoint) (Result, bool) {
	key := m.Url + "\x00" + m.TokenFile + "\x00" + m.OauthFile
	a.mu.Lock()
	l, ok := a.lists[key]
	a.mu.Unlock()
	if !ok || a.ttl == 0 || a.now().Sub(l.at) >= a.ttl {
		digests := map[string]string{}
		err := listTools(ctx, s, func(t *mcp.Tool) error {
			d, err := toolreg.MCPDigest(t.Name, t.Description, t.InputSchema)
			if err != nil {
				return fmt.Errorf("%w: tool %q has an input schema that cannot be read: %v", errMCPListing, t.Name, err)
			}
			digests[t.Name] = d
			return nil
		})
		if errors.Is(err, errMCPListing) {
			return deterministic("the MCP server's tools/list is refused: %v: not sent", err), false
		}
		if err != nil {
			return notSent("list the MCP server's tools", err), false
		}
		l = mcpListing{at: a.now(), digests: digests}
		a.remember(key, l)
	}
	switch d, ok := l.digests[m.Tool]; {
	case !ok:
		return deterministic("MCP tool %q is no longer listed by its server: not sent", m.Tool), false
	case d != m.SchemaDigest:
		return deterministic("MCP tool %q changed since it was imported (its description or input schema digests %s, the contract pins %s): not sent; import it again (steward tools import-mcp) once the change is reviewed", m.Tool, d, m.SchemaDigest), false
	}
	return Result{}, true
}

// remember caches l under key, and forgets the listings past the ttl: the
// servers are the tools' urls, a tenant's to name, and a listing kept for
// every url ever called would grow without end.
func (a *mcpAdapter) remember(key string, l mcpListing) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, old := range a.lists {
		if l.at.Sub(old.at) >= a.ttl {
			delete(a.lists, k)
		}
	}
	if a.ttl > 0 {
		a.lists[key] = l
	}
}

// credential is how a call presents itself: the Authorization header's
// value, read from the token file at each call or from the OAuth client
// credentials' token (fetched under the request's deadline); nil when the
// tool names neither.
func (a *mcpAdapter) credential(m *stewardv1.McpEndpoint) (func(context.Context) (string, error), error) {
	switch {
	case m.TokenFile != "":
		tok, err := os.ReadFile(m.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("read the MCP tool's token file: %v", err)
		}
		h := "Bearer " + strings.TrimSpace(string(tok))
		return func(context.Context) (string, error) { return h, nil }, nil
	case m.OauthFile != "":
		src, err := a.tokenSource(m.OauthFile)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (string, error) {
			t, err := src.token(ctx)
			if err != nil {
				return "", fmt.Errorf("get an OAuth token: %w", err)
			}
			return "Bearer " + t.AccessToken, nil
		}, nil
	}
	return nil, nil
}

// OAuthClient is an oauth_file's content: client credentials Steward
// exchanges at token_url for bearer tokens.
type OAuthClient struct {
	TokenURL     string   `json:"token_url"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	Scopes       []string `json:"scopes"`
}

// mcpOAuth is an oauth file's client and its last token, reused until it
// expires. A token is fetched under the context of the request that needs
// it, so that a token URL that never answers cannot hold a call past its
// timeout (oauth2's own token sources fetch without one).
type mcpOAuth struct {
	cfg    clientcredentials.Config
	client *http.Client

	mu  sync.Mutex
	tok *oauth2.Token
}

func (o *mcpOAuth) token(ctx context.Context) (*oauth2.Token, error) {
	o.mu.Lock()
	t := o.tok
	o.mu.Unlock()
	if t.Valid() {
		return t, nil
	}
	t, err := o.cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, o.client))
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	o.tok = t
	o.mu.Unlock()
	return t, nil
}

// tokenSource is the OAuth client of an oauth file, kept while the file
// is unchanged so that a token is reused until it expires.
func (a *mcpAdapter) tokenSource(path string) (*mcpOAuth, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the MCP tool's oauth file: %v", err)
	}
	sum := sha256.Sum256(raw)
	key := path + "\x00" + string(sum[:])
	a.mu.Lock()
	defer a.mu.Unlock()
	if src, ok := a.tokens[key]; ok {
		return src, nil
	}
	var c OAuthClient
	if err := json.Unmarshal(raw, &c); err != nil || c.TokenURL == "" || c.ClientID == "" {
		return nil, fmt.Errorf("oauth file %s: want {\"token_url\", \"client_id\", \"client_secret\", \"scopes\"}", path)
	}
	src := &mcpOAuth{cfg: clientcredentials.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: c.TokenURL, Scopes: c.Scopes},
		client: &http.Client{Transport: a.base, CheckRedirect: noRedirect}}
	a.tokens[key] = src
	return src, nil
}

// withTrace watches a request's writes with s.
func withTrace(ctx context.Context, s *sendTracker) context.Context {
	return httptrace.WithClientTrace(ctx, s.trace())
}
