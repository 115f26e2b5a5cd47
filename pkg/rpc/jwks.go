package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// KeySet is a fixed set of public keys, such as a JWKS file's. It is safe
// for concurrent use.
type KeySet struct{ set jwk.Set }

// LoadJWKS reads a JWKS file ({"keys": [...]}) of public keys.
func LoadJWKS(path string) (*KeySet, error) {
	set, err := jwk.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if set.Len() == 0 {
		return nil, fmt.Errorf("%s: the key set holds no key", path)
	}
	if err := publicOnly(set); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &KeySet{set: set}, nil
}

// publicOnly refuses a set with a private or a symmetric key: a JWKS is
// published, and such a key there is a secret given away.
func publicOnly(set jwk.Set) error {
	for i := range set.Len() {
		k, _ := set.Key(i)
		switch k.(type) {
		case jwk.RSAPublicKey, jwk.ECDSAPublicKey, jwk.OKPPublicKey:
		default:
			return fmt.Errorf("keys[%d] (kty %s) is not a public key: a JWKS holds public keys only", i, k.KeyType())
		}
	}
	return nil
}

// Key implements JWTKeys.
func (s *KeySet) Key(_ context.Context, kid string) (jwk.Key, error) { return keyIn(s.set, kid) }

// keyIn returns set's key named kid. A key published for encryption
// (use "enc") never verifies a signature, and a kid that two signing keys
// share names neither: which one signed would be the issuer's guess. An
// encryption key may share a signing key's kid (RFC 7517, 4.5): the kid
// then names the signing key.
func keyIn(set jwk.Set, kid string) (jwk.Key, error) {
	if kid == "" {
		if set.Len() == 1 {
			k, _ := set.Key(0)
			return forSignatures(k)
		}
		return nil, fmt.Errorf("the JWT names no key id (kid), and the key set holds %d keys", set.Len())
	}
	var found, other jwk.Key
	for i := range set.Len() {
		k, _ := set.Key(i)
		switch id, _ := k.KeyID(); {
		case id != kid:
		case !forSignature(k):
			other = k
		case found != nil:
			return nil, fmt.Errorf("the JWT's key id (kid) %q names two keys of the key set", kid)
		default:
			found = k
		}
	}
	if found == nil && other != nil {
		return forSignatures(other)
	}
	if found == nil {
		return nil, fmt.Errorf("the JWT's key id (kid) %q is not a key Steward knows", kid)
	}
	return found, nil
}

// forSignatures returns k unless it is published for another use.
func forSignatures(k jwk.Key) (jwk.Key, error) {
	if !forSignature(k) {
		id, _ := k.KeyID()
		use, _ := k.KeyUsage()
		return nil, fmt.Errorf("key %q is published for %q, not for signatures", id, use)
	}
	return k, nil
}

// forSignature reports whether k may verify a signature: it names no use,
// or "sig".
func forSignature(k jwk.Key) bool {
	use, ok := k.KeyUsage()
	return !ok || use == "" || use == string(jwk.ForSignature)
}

// OIDCKeys are an OpenID Connect issuer's signing keys, found by discovery
// and cached; the cache refreshes them as the issuer's answer allows, and
// at once (at most once every RefetchGap) for a key id it does not hold,
// so that a rotated key is known at its first use. Close stops the
// refreshes. It is safe for concurrent use.
type OIDCKeys struct {
	cache   *jwk.Cache
	jwksURI string
	stop    context.CancelFunc

	mu          sync.Mutex
	lastRefetch time.Time
}

// RefetchGap is the least time between two fetches of an issuer's keys
// for unknown key ids: a stream of tokens naming made-up ids must not
// turn into a stream of requests to the issuer.
const RefetchGap = 30 * time.Second

// DiscoverOIDC reads issuer's OpenID configuration
// (issuer/.well-known/openid-configuration), checks that it names issuer,
// and fetches the keys at its jwks_uri with client (a client with a 10s
// timeout when nil).
func DiscoverOIDC(ctx context.Context, issuer string, client *http.Client) (*OIDCKeys, error) {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	secure := strings.HasPrefix(issuer, "https://")
	if secure {
		client = staysOnHTTPS(client)
	}
	url := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("OIDC discovery: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("OIDC discovery: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("OIDC discovery: %s answered %s", url, resp.Status)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("OIDC discovery: %s: %w", url, err)
	}
	switch {
	case doc.Issuer != issuer:
		// OpenID Connect Discovery 1.0, 4.3: a configuration naming
		// another issuer must not be used.
		return nil, fmt.Errorf("OIDC discovery: %s names the issuer %q, not %q", url, doc.Issuer, issuer)
	case doc.JWKSURI == "":
		return nil, fmt.Errorf("OIDC discovery: %s names no jwks_uri", url)
	case secure && !strings.HasPrefix(doc.JWKSURI, "https://"):
		return nil, fmt.Errorf("OIDC discovery: %s names the jwks_uri %q, which is not https: keys fetched in clear could be swapped on the way", url, doc.JWKSURI)
	}
	cctx, stop := context.WithCancel(context.Background())
	cache, err := jwk.NewCache(cctx, httprc.NewClient())
	if err != nil {
		stop()
		return nil, fmt.Errorf("OIDC keys: %w", err)
	}
	if err := cache.Register(ctx, doc.JWKSURI, jwk.WithHTTPClient(client), jwk.WithMinInterval(time.Minute), jwk.WithMaxInterval(time.Hour)); err != nil {
		stop()
		return nil, fmt.Errorf("OIDC keys from %s: %w", doc.JWKSURI, err)
	}
	return &OIDCKeys{cache: cache, jwksURI: doc.JWKSURI, stop: stop}, nil
}

// staysOnHTTPS returns a copy of c that follows no redirect away from
// https: an issuer reached over https must not have its keys, or its
// configuration, fetched in clear on another's word.
func staysOnHTTPS(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" {
			return fmt.Errorf("redirected to %s, which is not https: keys fetched in clear could be swapped on the way", req.URL.Redacted())
		}
		if c.CheckRedirect != nil {
			return c.CheckRedirect(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cc
}

// JWKSURI returns where the keys come from.
func (o *OIDCKeys) JWKSURI() string { return o.jwksURI }

// Key implements JWTKeys.
func (o *OIDCKeys) Key(ctx context.Context, kid string) (jwk.Key, error) {
	set, err := o.cache.Lookup(ctx, o.jwksURI)
	if err != nil {
		return nil, fmt.Errorf("the issuer's keys are unavailable: %w", err)
	}
	k, err := keyIn(set, kid)
	if err == nil || kid == "" || !o.mayRefetch() {
		return k, err
	}
	if set, rerr := o.cache.Refresh(ctx, o.jwksURI); rerr == nil {
		return keyIn(set, kid)
	}
	return nil, err
}

func (o *OIDCKeys) mayRefetch() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if time.Since(o.lastRefetch) < RefetchGap {
		return false
	}
	o.lastRefetch = time.Now()
	return true
}

// Close stops refreshing the keys.
func (o *OIDCKeys) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.cache.Shutdown(ctx)
	o.stop()
}
