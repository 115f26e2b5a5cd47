package calltoken_test

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/steward-run/steward/pkg/calltoken"
)

const aud = "https://tools.example/search"

var body = []byte(`{"params":{"q":"x"}}`)

func claims(now time.Time) calltoken.Claims {
	return calltoken.Claims{
		Audience: aud, Method: http.MethodPost, TaskID: "t1", ActionID: "act-1", OpKey: "op-1", Tool: "search",
		BodyHash: calltoken.BodyHash(body), IssuedAt: now.Unix(), ExpiresAt: now.Add(40 * time.Second).Unix(),
	}
}

// TestVerifyRefuses: every claim is checked, and a token that fails one
// is not remembered by the replay cache.
func TestVerifyRefuses(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	s := calltoken.NewSigner(key)
	sign := func(change func(*calltoken.Claims)) string {
		c := claims(now)
		change(&c)
		tok, err := s.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := sign(func(*calltoken.Claims) {})
	parts := strings.Split(good, ".")
	noneAlg := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."
	foreign, _ := calltoken.NewSigner(other).Sign(claims(now))
	for _, tc := range []struct {
		name, token, method, want string
		body                      []byte
		at                        time.Time
	}{
		{"another audience", sign(func(c *calltoken.Claims) { c.Audience = "https://tools.example/other" }), "POST", "not this tool", body, now},
		{"another body", good, "POST", "body_hash", []byte(`{}`), now},
		{"another method", good, "GET", "not a GET", nil, now},
		{"expired", good, "POST", "expired", body, now.Add(time.Minute)},
		{"from the future", good, "POST", "future", body, now.Add(-time.Minute)},
		{"another key", foreign, "POST", "no call key", body, now},
		{"alg none", noneAlg, "POST", "alg", body, now},
		{"signature", parts[0] + "." + parts[1] + "." + parts[2][:10] + "AAAA" + parts[2][14:], "POST", "signature", body, now},
		{"not a JWS", "abc", "POST", "compact", body, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := calltoken.NewVerifier(calltoken.NewKeySet(pub), aud, calltoken.WithReplayCache(calltoken.NewMemoryReplayCache()),
				calltoken.WithClock(func() time.Time { return tc.at }))
			if _, err := v.Verify(tc.token, tc.method, tc.body); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify: %v; want an error saying %q", err, tc.want)
			}
			// A refused token is not remembered: the genuine one still passes.
			if tc.at == now {
				if _, err := v.Verify(good, "POST", body); err != nil {
					t.Errorf("the genuine token after a refusal: %v", err)
				}
			}
		})
	}
}

// TestHandlerChecksTheHeaders: a token for one op_key does not pass with
// another's headers; a status query's token passes only for its op_key.
func TestHandlerChecksTheHeaders(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Now()
	s := calltoken.NewSigner(key)
	v := calltoken.NewVerifier(calltoken.NewKeySet(pub), aud)
	h := v.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := calltoken.FromContext(r.Context()); !ok {
			t.Error("no claims in the context")
		}
	}))
	call, _ := s.Sign(claims(now))
	st := claims(now)
	st.Method, st.BodyHash = http.MethodGet, ""
	status, _ := s.Sign(st)
	for _, tc := range []struct {
		name, method, target, key, token string
		want                             int
	}{
		{"call", "POST", "/search", "op-1", call, http.StatusOK},
		{"call under another key", "POST", "/search", "op-2", call, http.StatusUnauthorized},
		{"status query", "GET", "/status?op_key=op-1", "", status, http.StatusOK},
		{"status query of another key", "GET", "/status?op_key=op-2", "", status, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(string(body)))
			if tc.method == "GET" {
				r = httptest.NewRequest(tc.method, tc.target, nil)
			}
			r.Header.Set(calltoken.Header, tc.token)
			r.Header.Set("Idempotency-Key", tc.key)
			r.Header.Set("Steward-Action-Id", "act-1")
			r.Header.Set("Steward-Task-Id", "t1")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("answered %d %s; want %d", w.Code, w.Body, tc.want)
			}
		})
	}
}

// TestAnotherJOSELibraryVerifiesTheToken: the token and the JWKS are the
// standard ones, so a tool in any language can check them.
func TestAnotherJOSELibraryVerifiesTheToken(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	tok, err := calltoken.NewSigner(key).Sign(claims(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	data, err := calltoken.MarshalJWKS(pub)
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jws.Verify([]byte(tok), jws.WithKeySet(set, jws.WithRequireKid(true))); err != nil {
		t.Fatalf("jwx refuses the token: %v", err)
	}
	k, _ := set.Key(0)
	if alg, ok := k.Algorithm(); !ok || alg != jwa.EdDSA() {
		t.Errorf("the JWKS key's alg is %v; want EdDSA", alg)
	}
	if kid, _ := k.KeyID(); kid != calltoken.KeyID(pub) {
		t.Errorf("kid %q; want the thumbprint %q", kid, calltoken.KeyID(pub))
	}
	if tp, _ := k.Thumbprint(crypto.SHA256); base64.RawURLEncoding.EncodeToString(tp) != calltoken.KeyID(pub) {
		t.Errorf("jwx's RFC 7638 thumbprint differs from the kid")
	}
}
