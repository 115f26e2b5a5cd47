package calltoken

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ErrReplayed is Verify's error for a token whose ID was seen before.
var ErrReplayed = errors.New("call token used before")

// Verifier checks the tokens of the calls to one tool.
type Verifier struct {
	keys     KeySet
	audience string
	leeway   time.Duration
	replay   ReplayCache
	now      func() time.Time
}

// Option sets up a Verifier.
type Option func(*Verifier)

// WithReplayCache refuses a token whose ID the cache has seen: without
// one, a token can be used again until it expires.
func WithReplayCache(c ReplayCache) Option { return func(v *Verifier) { v.replay = c } }

// WithLeeway is how far the tool's clock may be from Steward's (Skew by
// default).
func WithLeeway(d time.Duration) Option { return func(v *Verifier) { v.leeway = d } }

// WithClock sets the clock (time.Now by default).
func WithClock(now func() time.Time) Option { return func(v *Verifier) { v.now = now } }

// NewVerifier returns a verifier of tokens signed by keys for audience:
// the tool's call URL exactly as its contract registers it.
func NewVerifier(keys KeySet, audience string, opts ...Option) *Verifier {
	v := &Verifier{keys: keys, audience: audience, leeway: Skew, now: time.Now}
	for _, o := range opts {
		o(v)
	}
	return v
}

// Verify checks token for a request with method and body (nil for a
// status query's GET) and returns its claims: signed by a trusted key, for
// this audience and method, over this body, within its time, and — with
// a replay cache — not seen before. Only a token that passes every other
// check is remembered by the cache.
func (v *Verifier) Verify(token, method string, body []byte) (*Claims, error) {
	c, err := v.signed(token)
	if err != nil {
		return nil, err
	}
	now := v.now()
	switch {
	case c.Issuer != Issuer:
		return nil, fmt.Errorf("call token issued by %q, not %q", c.Issuer, Issuer)
	case c.Audience != v.audience:
		return nil, fmt.Errorf("call token for %q, not this tool (%q)", c.Audience, v.audience)
	case c.Method != method:
		return nil, fmt.Errorf("call token for a %s, not a %s", c.Method, method)
	case method == http.MethodGet && c.BodyHash != "":
		return nil, errors.New("call token for a request with a body")
	case method != http.MethodGet && c.BodyHash != BodyHash(body):
		return nil, errors.New("call token for another body: its body_hash does not match")
	case c.ID == "" || c.ExpiresAt == 0:
		return nil, errors.New("call token without jti or exp")
	case now.After(time.Unix(c.ExpiresAt, 0).Add(v.leeway)):
		return nil, fmt.Errorf("call token expired at %s", time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339))
	case time.Unix(c.IssuedAt, 0).After(now.Add(v.leeway)):
		return nil, fmt.Errorf("call token issued in the future (%s)", time.Unix(c.IssuedAt, 0).UTC().Format(time.RFC3339))
	}
	if v.replay != nil && !v.replay.First(c.ID, time.Unix(c.ExpiresAt, 0).Add(v.leeway), now) {
		return nil, fmt.Errorf("%w: jti %s", ErrReplayed, c.ID)
	}
	return c, nil
}

// signed checks token's form and signature and returns its claims.
func (v *Verifier) signed(token string) (*Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("call token is not a compact JWS")
	}
	var h header
	if err := decode(parts[0], &h); err != nil {
		return nil, fmt.Errorf("call token header: %w", err)
	}
	// Only EdDSA: a token never chooses how it is checked.
	if h.Alg != "EdDSA" || len(h.Crit) > 0 {
		return nil, fmt.Errorf("call token: alg %q (or crit) not accepted; want EdDSA", h.Alg)
	}
	key, err := v.keys.key(h.Kid)
	if err != nil {
		return nil, err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !ed25519.Verify(key, []byte(parts[0]+"."+parts[1]), sig) {
		return nil, errors.New("call token signature does not hold")
	}
	var c Claims
	if err := decode(parts[1], &c); err != nil {
		return nil, fmt.Errorf("call token claims: %w", err)
	}
	return &c, nil
}

// decode reads one base64url part as JSON.
func decode(part string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return err
	}
	return json.NewDecoder(bytes.NewReader(b)).Decode(v)
}
