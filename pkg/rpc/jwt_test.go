package rpc_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestJWTVerifier runs the verifier over good tokens and every way a
// token is refused, each with the reason the caller is told.
func TestJWTVerifier(t *testing.T) {
	iss := stewardtest.NewJWTIssuer(t, "https://id.example.com", "steward", "key-1")
	keys, err := rpc.LoadJWKS(iss.WriteJWKS(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := rpc.NewJWTVerifier(keys, rpc.JWTConfig{Audience: "steward", Issuer: iss.Issuer})
	if err != nil {
		t.Fatal(err)
	}
	with := func(change func(map[string]any)) string {
		c := iss.Claims("user:ann", "operator")
		c["tenant"] = "acme"
		change(c)
		return iss.Sign(t, c)
	}
	now := time.Now()
	stranger := stewardtest.NewJWK(t, "ES256", "key-1") // same kid, another key
	unknown := stewardtest.NewJWK(t, "ES256", "key-2")
	rsaKey := stewardtest.NewJWK(t, "RS256", "key-1")
	for _, c := range []struct {
		name, token, refused string
	}{
		{"good", with(func(map[string]any) {}), ""},
		{"an audience among several", with(func(c map[string]any) { c["aud"] = []string{"other", "steward"} }), ""},
		{"expired", with(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() }), "expired"},
		{"not yet valid", with(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() }), "not valid yet"},
		{"issued in the future", with(func(c map[string]any) { c["iat"] = now.Add(time.Hour).Unix() }), "issued in the future"},
		{"no expiry", with(func(c map[string]any) { delete(c, "exp") }), "no expiry"},
		{"wrong audience", with(func(c map[string]any) { c["aud"] = "billing" }), `audience (aud) does not include "steward"`},
		{"no audience", with(func(c map[string]any) { delete(c, "aud") }), "audience"},
		{"wrong issuer", with(func(c map[string]any) { c["iss"] = "https://evil.example.com" }), `issuer (iss) is not "https://id.example.com"`},
		{"unknown key id", stewardtest.SignJWT(t, unknown, "ES256", iss.Claims("user:ann")), `key id (kid) "key-2" is not a key`},
		{"alg none", stewardtest.UnsignedJWT(t, "key-1", iss.Claims("user:ann")), `alg "none"`},
		{"an alg the key does not allow", stewardtest.SignJWT(t, rsaKey, "RS256", iss.Claims("user:ann")), `alg "RS256" is not allowed by key "key-1"`},
		{"bad signature", stewardtest.SignJWT(t, stranger, "ES256", iss.Claims("user:ann")), "signature does not verify"},
		{"tampered claims", tamper(t, with(func(map[string]any) {})), "signature does not verify"},
		{"malformed", "WzFd.bm90IGpzb24.c2ln", "not a well-formed JWT"},
		{"malformed header", "bm90IGpzb24.bm90IGpzb24.c2ln", "not a well-formed JWT"},
		{"a reserved principal", with(func(c map[string]any) { c["sub"] = "steward" }), "reserved"},
		{"no principal", with(func(c map[string]any) { delete(c, "sub") }), "is empty"},
		{"roles not an array", with(func(c map[string]any) { c["roles"] = "admin" }), "not an array of strings"},
		{"roles not strings", with(func(c map[string]any) { c["roles"] = []any{"admin", 3} }), "not an array of strings"},
		{"tenant not a string", with(func(c map[string]any) { c["tenant"] = 7 }), "tenant claim is not a string"},
		{"tenant with an invisible character", with(func(c map[string]any) { c["tenant"] = "ac\u200bme" }), "invisible"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !rpc.LooksLikeJWT(c.token) {
				t.Fatalf("%q does not look like a JWT", c.token)
			}
			id, err := v.Verify(context.Background(), c.token)
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused == "":
				if id.Principal != "user:ann" || !slices.Equal(id.Roles, []string{"operator"}) || id.Tenant != "acme" || !id.Verified {
					t.Fatalf("identity %+v", id)
				}
			case err == nil:
				t.Fatalf("accepted as %+v, want refused for %q", id, c.refused)
			case !strings.Contains(err.Error(), c.refused):
				t.Fatalf("refused with %q, want it to say %q", err, c.refused)
			}
		})
	}
}

// TestJWTClaimNames: the identity comes from the claims configured.
func TestJWTClaimNames(t *testing.T) {
	iss := stewardtest.NewJWTIssuer(t, "", "steward", "k")
	keys, err := rpc.LoadJWKS(iss.WriteJWKS(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := rpc.NewJWTVerifier(keys, rpc.JWTConfig{Audience: "steward", PrincipalClaim: "email", RolesClaim: "groups", TenantClaim: "org"})
	if err != nil {
		t.Fatal(err)
	}
	c := iss.Claims("opaque-subject-id")
	c["email"], c["groups"], c["org"] = "ann@example.com", []string{"auditor"}, "acme"
	id, err := v.Verify(context.Background(), iss.Sign(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if id.Principal != "ann@example.com" || !slices.Equal(id.Roles, []string{"auditor"}) || id.Tenant != "acme" {
		t.Fatalf("identity %+v", id)
	}
}

// TestJWKSFileHoldsPublicKeysOnly: a private or symmetric key in a JWKS
// is a secret published, and refused; so is an empty set.
func TestJWKSFileHoldsPublicKeysOnly(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"symmetric": `{"keys": [{"kty": "oct", "kid": "s", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}]}`,
		"empty":     `{"keys": []}`,
		"not json":  `keys`,
	} {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := rpc.LoadJWKS(p); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if _, err := rpc.NewJWTVerifier(nil, rpc.JWTConfig{}); err == nil {
		t.Error("a verifier without an audience was made")
	}
}

// TestAKeyVerifiesOnlyWhatItIsFor: a key the set publishes for encryption
// does not verify a signature, and a kid two keys share names neither.
func TestAKeyVerifiesOnlyWhatItIsFor(t *testing.T) {
	iss := stewardtest.NewJWTIssuer(t, "https://id.example.com", "steward", "key-1")
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(iss.JWKS(t), &set); err != nil {
		t.Fatal(err)
	}
	other := map[string]any{}
	if err := json.Unmarshal(publicJWK(t, stewardtest.NewJWK(t, "ES256", "key-1")), &other); err != nil {
		t.Fatal(err)
	}
	enc := maps.Clone(set.Keys[0])
	enc["use"] = "enc"
	for name, tc := range map[string]struct {
		keys []map[string]any
		want string
	}{
		"for encryption": {[]map[string]any{enc}, `published for "enc"`},
		"a shared kid":   {[]map[string]any{set.Keys[0], other}, `names two keys`},
	} {
		v := verifierOf(t, tc.keys)
		if _, err := v.Verify(context.Background(), iss.Sign(t, iss.Claims("user:ann"))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a refusal saying %q", name, err, tc.want)
		}
	}

	// An issuer may publish its encryption key under its signing key's
	// kid (RFC 7517 4.5 allows it for keys of different uses): the kid
	// then names one key for signatures, which verifies.
	otherEnc := maps.Clone(other)
	otherEnc["use"] = "enc"
	for name, keys := range map[string][]map[string]any{
		"enc after": {set.Keys[0], otherEnc}, "enc before": {otherEnc, set.Keys[0]},
	} {
		v := verifierOf(t, keys)
		if _, err := v.Verify(context.Background(), iss.Sign(t, iss.Claims("user:ann"))); err != nil {
			t.Errorf("a signing key and an encryption key sharing its kid (%s): %v, want the token verified", name, err)
		}
	}
}

// verifierOf verifies JWTs for audience "steward" with a JWKS file that
// holds keys.
func verifierOf(t *testing.T, keys []map[string]any) *rpc.JWTVerifier {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"keys": keys})
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := rpc.LoadJWKS(p)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rpc.NewJWTVerifier(loaded, rpc.JWTConfig{Audience: "steward"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// publicJWK is k's public half as JSON.
func publicJWK(t *testing.T, k jwk.Key) []byte {
	t.Helper()
	pub, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(pub)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOIDCDiscovery finds the keys through the issuer's OpenID
// configuration and verifies a token signed with them, iss included.
func TestOIDCDiscovery(t *testing.T) {
	iss := stewardtest.NewJWTIssuer(t, "", "steward", "oidc-1")
	url := iss.ServeOIDC(t)
	keys, err := rpc.DiscoverOIDC(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(keys.Close)
	v, err := rpc.NewJWTVerifier(keys, rpc.JWTConfig{Audience: "steward", Issuer: url})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := v.Verify(context.Background(), iss.Sign(t, iss.Claims("user:oidc", "auditor"))); err != nil || id.Principal != "user:oidc" {
		t.Fatalf("a token of the issuer: %+v, %v", id, err)
	}
	// The issuer rotates its key: a token naming the new kid has the keys
	// fetched again at once; another unknown kid right after does not.
	iss.Rotate(t, "oidc-2")
	if id, err := v.Verify(context.Background(), iss.Sign(t, iss.Claims("user:oidc"))); err != nil || id.Principal != "user:oidc" {
		t.Fatalf("a token of the rotated key: %+v, %v", id, err)
	}
	iss.Rotate(t, "oidc-3")
	if _, err := v.Verify(context.Background(), iss.Sign(t, iss.Claims("user:oidc"))); err == nil || !strings.Contains(err.Error(), `"oidc-3" is not a key`) {
		t.Fatalf("a second new key within %s: %v, want it unknown until the gap has passed", rpc.RefetchGap, err)
	}
	if _, err := rpc.DiscoverOIDC(context.Background(), url+"/other", nil); err == nil {
		t.Fatal("discovery of an issuer whose configuration is not found succeeded")
	}
	// A configuration that names another issuer is not used (OpenID
	// Connect Discovery 1.0, 4.3).
	if _, err := rpc.DiscoverOIDC(context.Background(), url+"/", nil); err == nil || !strings.Contains(err.Error(), "names the issuer") {
		t.Fatalf("discovery whose configuration names another issuer: %v", err)
	}
}

// TestOIDCKeysStayOnHTTPS: an issuer reached over https has its keys
// fetched over https too: a configuration naming a jwks_uri in clear, or a
// redirect of the keys to one, is refused and nothing is fetched in clear,
// since keys fetched in clear could be swapped on the way for an
// attacker's.
func TestOIDCKeysStayOnHTTPS(t *testing.T) {
	iss := stewardtest.NewJWTIssuer(t, "", "steward", "oidc-1")
	var inClear atomic.Int32
	clear := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		inClear.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(iss.JWKS(t))
	}))
	t.Cleanup(clear.Close)
	mux := http.NewServeMux()
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	var jwksURI atomic.Value
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": jwksURI.Load().(string)})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, clear.URL+"/keys", http.StatusFound)
	})
	for _, c := range []struct{ name, uri, says string }{
		{"a jwks_uri in clear", clear.URL + "/keys", "which is not https"},
		{"a redirect to one", srv.URL + "/keys", ""}, // refused by the fetch, which then times out
	} {
		t.Run(c.name, func(t *testing.T) {
			jwksURI.Store(c.uri)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			keys, err := rpc.DiscoverOIDC(ctx, srv.URL, srv.Client())
			if err == nil {
				keys.Close()
			}
			if n := inClear.Load(); n != 0 || err == nil {
				t.Fatalf("DiscoverOIDC = %v, with %d fetches in clear; want refused, none", err, n)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("refused with %q, want it to say %q", err, c.says)
			}
		})
	}
}

// tamper changes a signed token's payload, keeping its signature.
func tamper(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	p := []byte(parts[1])
	if p[len(p)/2] == 'A' {
		p[len(p)/2] = 'B'
	} else {
		p[len(p)/2] = 'A'
	}
	return parts[0] + "." + string(p) + "." + parts[2]
}
