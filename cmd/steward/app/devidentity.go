package app

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"

	"github.com/steward-run/steward/pkg/keyfile"
)

// IdentityKeyFile is the name of the key in a dev server's data directory
// with which the server proves to the CLI that it owns that directory,
// before the CLI sends it the admin token it read there (docs/auth.md).
const IdentityKeyFile = "identity.key"

// IdentityPath is where a dev server answers the CLI's challenge. It
// needs no token: it is how the CLI decides whether to send one.
const IdentityPath = "/steward/identity"

// identity is a dev server's answer to a challenge: the address it
// listens on, and an HMAC, under its data directory's identity key, of
// that address and the challenge's nonce. Only a server that read the key
// can make it, and a listener that relays the challenge to the real
// server gets the real server's address back, not its own.
type identity struct {
	Addr  string `json:"addr"`
	Proof string `json:"proof"`
}

func identityProof(key []byte, addr, nonce string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("steward dev identity v1\n" + addr + "\n" + nonce))
	return hex.EncodeToString(mac.Sum(nil))
}

// loadIdentityKey reads dir's identity key, creating it (0600, random)
// when create is set and there is none.
func loadIdentityKey(dir string, create bool) ([]byte, error) {
	path := filepath.Join(dir, IdentityKeyFile)
	if create {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		if _, err := keyfile.Create(path, []byte(hex.EncodeToString(b)+"\n")); err != nil {
			return nil, err
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s is not 64 hex digits", path)
	}
	return key, nil
}

// identityHandler answers the CLI's challenge (GET IdentityPath?nonce=…)
// with the address addr says the server listens on.
func identityHandler(key []byte, addr func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nonce := r.URL.Query().Get("nonce")
		if _, err := hex.DecodeString(nonce); err != nil || len(nonce) < 32 || len(nonce) > 128 {
			http.Error(w, "nonce: want 32 to 128 hex digits", http.StatusBadRequest)
			return
		}
		a := addr()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(identity{Addr: a, Proof: identityProof(key, a, nonce)})
	})
}

// proveLocal asks the server at base (scheme://host:port), through next
// and without a token, to prove that it owns the data directory dir: its
// answer must name the address its connection reached — IP:PORT, not the
// name dialed — and carry the HMAC of that address and a fresh nonce
// under dir's identity key. It returns that address, which the token may
// then be sent to, and nothing else.
func proveLocal(next http.RoundTripper, base *http.Request, dir string) (string, error) {
	key, err := loadIdentityKey(dir, false)
	if err != nil {
		return "", fmt.Errorf("no identity key to check it against (%w)", err)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	nonce := hex.EncodeToString(b)
	u := *base.URL
	u.Path, u.RawPath, u.RawQuery, u.Fragment = IdentityPath, "", "nonce="+nonce, ""
	var remote string
	ctx := httptrace.WithClientTrace(base.Context(), &httptrace.ClientTrace{GotConn: func(c httptrace.GotConnInfo) {
		remote = c.Conn.RemoteAddr().String()
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var id identity
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("it answers %s to %s", resp.Status, IdentityPath)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&id); err != nil {
		return "", fmt.Errorf("its answer to %s is not an identity: %w", IdentityPath, err)
	}
	if !sameListener(id.Addr, remote) {
		return "", fmt.Errorf("it says it listens on %q, not %s, where the CLI reached it", id.Addr, remote)
	}
	if !hmac.Equal([]byte(id.Proof), []byte(identityProof(key, id.Addr, nonce))) {
		return "", errors.New("its proof does not verify under the data directory's identity key")
	}
	return remote, nil
}

// sameListener reports whether a server that says it listens on listen
// is the one at remote, the IP:PORT the challenge's connection reached:
// the same port, and the same IP or a wildcard that covers it (0.0.0.0
// IPv4 only; :: both, as Go listens). A name is never enough: localhost
// may reach either loopback family, and a listener on the one the server
// is not on could relay the challenge to it.
func sameListener(listen, remote string) bool {
	lh, lp, err := net.SplitHostPort(listen)
	rh, rp, rerr := net.SplitHostPort(remote)
	if err != nil || rerr != nil || lp != rp {
		return false
	}
	lip, rip := net.ParseIP(lh), net.ParseIP(rh)
	switch {
	case lip == nil || rip == nil:
		return false
	case lip.Equal(net.IPv6unspecified):
		return true
	case lip.Equal(net.IPv4zero):
		return rip.To4() != nil
	}
	return lip.Equal(rip)
}
