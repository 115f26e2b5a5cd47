package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/access"
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
// token, if there is one — token, else $STEWARD_TOKEN, else, to a server on
// this machine only that proves it owns the default data directory, the
// admin token of the token file `steward dev` created there (localBearer).
// It follows no
// redirect: the token is added to every request the client makes, so a
// redirect would carry it, and a 307 the request too, wherever the
// answer points; Steward never redirects. With roots (--ca), a server
// over TLS must show a certificate they sign; else the system's CAs decide.
func httpClient(token string, roots *x509.CertPool) *http.Client {
	if token == "" {
		token = os.Getenv(TokenEnv)
	}
	next := http.DefaultTransport.(*http.Transport).Clone()
	if roots != nil {
		next.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = bearer{token: token, next: next}
	if token == "" {
		rt = newLocalBearer(next)
	}
	return &http.Client{Transport: rt, CheckRedirect: noRedirect}
}

// remote is where an older command's calls go (audit, receipt,
// dead-letters): its --addr, --token and --ca, each else the environment,
// else the config file 'steward login' wrote — the people's commands' rule
// (resolveConnection).
type remote struct{ addr, token, ca string }

// flags adds --addr, --token and --ca to fs; of says what --addr names.
func (r *remote) flags(fs *flag.FlagSet, of string) {
	fs.StringVar(&r.addr, "addr", "", "`HOST:PORT` (or URL) of "+of+" (default $"+AddrEnv+", else the config file's, else "+DefaultAddr+")")
	fs.StringVar(&r.token, "token", "", "bearer `TOKEN` (default $"+TokenEnv+", else the config file's for its address, else, for a server on this machine, the admin token in "+DefaultDataDir+"/"+TokensFileName+")")
	fs.StringVar(&r.ca, "ca", "", "PEM `FILE` of the CA certificates that sign the server's TLS certificate (give --addr as https://HOST:PORT; default $"+CAEnv+", else the config file's); trusted instead of the system's CAs")
}

// dial is r's base URL and an HTTP client carrying its token.
func (r remote) dial() (string, *http.Client, error) {
	base, token, ca, err := resolveConnection(r.addr, r.token, r.ca)
	if err != nil {
		return "", nil, err
	}
	roots, err := readCA(ca)
	if err != nil {
		return "", nil, fmt.Errorf("--ca: %w", err)
	}
	return base, httpClient(token, roots), nil
}

func noRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("the server answered with a redirect to %s, which the CLI does not follow (it would carry the token there): give that address in --addr if it is Steward's", req.URL.Redacted())
}

// localBearer adds the local dev admin token, if there is one, to a
// request for a server on this machine that proves it is the dev server
// of the data directory the token is from (proveLocal), and nothing to any
// other: whatever else listens on a loopback port — another user's
// process, a server started from another directory, a relay on the other
// loopback family — is refused before it can see the token. A server's
// proof is asked once per client and address, and the token goes only to
// the IP:PORT that gave it, whatever the name resolves to later.
type localBearer struct {
	next   http.RoundTripper // requests without the token, and the challenge
	pinned *http.Transport   // requests with it, dialed to the address that proved itself
	mu     sync.Mutex
	proven map[string]string // HOST:PORT asked for → the IP:PORT that answered the challenge
}

func newLocalBearer(base *http.Transport) *localBearer {
	b := &localBearer{next: base, pinned: base.Clone(), proven: map[string]string{}}
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	b.pinned.Proxy = nil
	b.pinned.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		b.mu.Lock()
		at, ok := b.proven[addr]
		b.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("%s has not proven it is the dev server", addr)
		}
		return d.DialContext(ctx, network, at)
	}
	return b
}

func (b *localBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	token := localToken(r.URL.Hostname())
	if token == "" {
		return b.next.RoundTrip(r)
	}
	if err := b.prove(r); err != nil {
		return nil, fmt.Errorf("not sending the admin token of %s to %s: the server there did not prove it is the dev server of that data directory: %w; give --token (or $%s) to send a token to it anyway", filepath.Join(DefaultDataDir, TokensFileName), r.URL.Host, err, TokenEnv)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return b.pinned.RoundTrip(r)
}

// prove records where r's HOST:PORT was proven to be, asking it the
// first time.
func (b *localBearer) prove(r *http.Request) error {
	port := r.URL.Port()
	if port == "" {
		port = map[bool]string{true: "443", false: "80"}[r.URL.Scheme == "https"]
	}
	// The key the transport dials pinned with (its canonical address).
	host := net.JoinHostPort(r.URL.Hostname(), port)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.proven[host]; ok {
		return nil
	}
	at, err := proveLocal(b.next, r, DefaultDataDir)
	if err != nil {
		return err
	}
	b.proven[host] = at
	return nil
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

// localToken returns the first admin token in DefaultDataDir's token file
// when host is this machine (localhost or a loopback address), or "": the
// dev server a developer just started answers its own CLI without a flag.
// A remote server never gets it.
func localToken(host string) string {
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(DefaultDataDir, TokensFileName))
	if err != nil {
		return ""
	}
	var f struct {
		Tokens []struct {
			Token string   `json:"token"`
			Roles []string `json:"roles"`
		} `json:"tokens"`
	}
	if json.Unmarshal(data, &f) != nil {
		return ""
	}
	for _, t := range f.Tokens {
		if slices.Contains(t.Roles, access.Admin) {
			return t.Token
		}
	}
	return ""
}
