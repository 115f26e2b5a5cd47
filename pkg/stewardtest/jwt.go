package stewardtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// JWTIssuer plays an identity provider in tests: it signs JWTs with a
// fresh ES256 key whose public half its JWKS holds, and can serve OpenID
// Connect discovery. Issuer and Audience are what Claims puts in iss and
// aud.
type JWTIssuer struct {
	Issuer   string
	Audience string
	KeyID    string
	key      jwk.Key

	mu   sync.Mutex
	jwks []byte // what ServeOIDC serves
}

// NewJWTIssuer returns an issuer with a new P-256 key named kid.
func NewJWTIssuer(tb testing.TB, issuer, audience, kid string) *JWTIssuer {
	tb.Helper()
	return &JWTIssuer{Issuer: issuer, Audience: audience, KeyID: kid, key: NewJWK(tb, "ES256", kid)}
}

// NewJWK returns a new private key for alg ("ES256" or "RS256") named kid.
func NewJWK(tb testing.TB, alg, kid string) jwk.Key {
	tb.Helper()
	var raw crypto.Signer
	var err error
	if alg == "RS256" {
		raw, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		raw, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		tb.Fatal(err)
	}
	k, err := jwk.Import(raw)
	if err != nil {
		tb.Fatal(err)
	}
	if err := k.Set(jwk.KeyIDKey, kid); err != nil {
		tb.Fatal(err)
	}
	return k
}

// JWKS returns the issuer's public key set, as JSON.
func (i *JWTIssuer) JWKS(tb testing.TB) []byte {
	tb.Helper()
	pub, err := i.key.PublicKey()
	if err != nil {
		tb.Fatal(err)
	}
	set := jwk.NewSet()
	if err := set.AddKey(pub); err != nil {
		tb.Fatal(err)
	}
	b, err := json.Marshal(set)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// WriteJWKS writes the issuer's JWKS to dir/jwks.json and returns its path.
func (i *JWTIssuer) WriteJWKS(tb testing.TB, dir string) string {
	tb.Helper()
	p := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(p, i.JWKS(tb), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// ServeOIDC serves the issuer's OpenID configuration and JWKS from a test
// server, makes its URL the issuer, and returns it.
func (i *JWTIssuer) ServeOIDC(tb testing.TB) string {
	tb.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	i.Issuer = srv.URL
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/keys"})
	})
	i.mu.Lock()
	i.jwks = i.JWKS(tb)
	i.mu.Unlock()
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		i.mu.Lock()
		jwks := i.jwks
		i.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	})
	return srv.URL
}

// Rotate replaces the issuer's key with a new one named kid: tokens are
// signed with it from now on, and ServeOIDC serves it in place of the old.
func (i *JWTIssuer) Rotate(tb testing.TB, kid string) {
	tb.Helper()
	i.key, i.KeyID = NewJWK(tb, "ES256", kid), kid
	jwks := i.JWKS(tb)
	i.mu.Lock()
	i.jwks = jwks
	i.mu.Unlock()
}

// Claims returns the claims of a good token for principal with roles:
// the issuer's iss and aud, issued now, expiring in an hour.
func (i *JWTIssuer) Claims(principal string, roles ...string) map[string]any {
	now := time.Now()
	if roles == nil {
		roles = []string{}
	}
	return map[string]any{
		"iss": i.Issuer, "aud": i.Audience, "sub": principal, "roles": roles,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// Sign returns claims as a JWT signed by the issuer's key.
func (i *JWTIssuer) Sign(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	return SignJWT(tb, i.key, "ES256", claims)
}

// SignJWT returns claims as a JWT signed with key under alg, its header
// naming key's kid.
func SignJWT(tb testing.TB, key jwk.Key, alg string, claims map[string]any) string {
	tb.Helper()
	tok := jwt.New()
	for k, v := range claims {
		if err := tok.Set(k, v); err != nil {
			tb.Fatal(err)
		}
	}
	a, ok := jwa.LookupSignatureAlgorithm(alg)
	if !ok {
		tb.Fatalf("no algorithm %q", alg)
	}
	b, err := jwt.Sign(tok, jwt.WithKey(a, key))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// UnsignedJWT returns claims as a JWT with alg "none" and no signature,
// naming kid.
func UnsignedJWT(tb testing.TB, kid string, claims map[string]any) string {
	tb.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT", "kid": kid}) + "." + enc(claims) + "."
}
