package rpc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// Default claim names, and the clock skew a JWT's times are given.
const (
	DefaultPrincipalClaim = "sub"
	DefaultRolesClaim     = "roles"
	DefaultTenantClaim    = "tenant"
	DefaultJWTSkew        = 30 * time.Second
)

// JWTConfig says what a bearer JWT must carry and where its identity is.
type JWTConfig struct {
	// Audience must be among the token's aud: a token minted for another
	// service is not one for Steward. Required.
	Audience string
	// Issuer, when set, must be the token's iss.
	Issuer string
	// PrincipalClaim, RolesClaim and TenantClaim name the claims the
	// identity comes from ("" for the defaults): the principal a string,
	// the roles an array of strings, the tenant a string.
	PrincipalClaim, RolesClaim, TenantClaim string
	// Skew is how far the token's clock may be from ours (DefaultJWTSkew
	// when 0).
	Skew time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// JWTKeys finds the public key that verifies a token.
type JWTKeys interface {
	// Key returns the key named kid; kid is "" for a token that names
	// none, which only a set of one key answers. An unknown kid is an
	// error that says so.
	Key(ctx context.Context, kid string) (jwk.Key, error)
}

// JWTVerifier verifies bearer JWTs and reads the identity they carry. It
// is safe for concurrent use.
type JWTVerifier struct {
	cfg  JWTConfig
	keys JWTKeys
}

// NewJWTVerifier returns a verifier of tokens signed by keys.
func NewJWTVerifier(keys JWTKeys, cfg JWTConfig) (*JWTVerifier, error) {
	if cfg.Audience == "" {
		return nil, errors.New("a JWT audience is required: a token minted for another service must not pass for one minted for Steward")
	}
	cfg.PrincipalClaim = cmp.Or(cfg.PrincipalClaim, DefaultPrincipalClaim)
	cfg.RolesClaim = cmp.Or(cfg.RolesClaim, DefaultRolesClaim)
	cfg.TenantClaim = cmp.Or(cfg.TenantClaim, DefaultTenantClaim)
	if cfg.Skew == 0 {
		cfg.Skew = DefaultJWTSkew
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &JWTVerifier{cfg: cfg, keys: keys}, nil
}

// LooksLikeJWT reports whether token has the shape of a compact JWS, three
// base64url parts joined by dots: a bearer of that shape is verified as a
// JWT, anything else is looked up among the static tokens.
func LooksLikeJWT(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		if strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

// Verify checks token (its signature, key, alg, time, audience and
// issuer) and returns the identity its claims carry. Its error says, for
// the caller, why the token was refused.
func (v *JWTVerifier) Verify(ctx context.Context, token string) (Identity, error) {
	msg, err := jws.ParseString(token)
	if err != nil {
		return Identity{}, fmt.Errorf("the bearer token is not a well-formed JWT: %v", err)
	}
	sigs := msg.Signatures()
	if len(sigs) != 1 {
		return Identity{}, fmt.Errorf("the bearer token is not a well-formed JWT: %d signatures", len(sigs))
	}
	h := sigs[0].ProtectedHeaders()
	alg, ok := h.Algorithm()
	switch {
	case !ok:
		return Identity{}, errors.New("the bearer token is not a well-formed JWT: its header names no alg")
	case alg == jwa.NoSignature():
		return Identity{}, errors.New(`the JWT is unsigned (alg "none"), and an unsigned token proves nothing`)
	}
	kid, _ := h.KeyID()
	key, err := v.keys.Key(ctx, kid)
	if err != nil {
		return Identity{}, err
	}
	if allowed := algorithmsFor(key); !slices.Contains(allowed, alg) {
		return Identity{}, fmt.Errorf("the JWT's alg %q is not allowed by key %q, which verifies only %s", alg, kid, strings.Join(algNames(allowed), ", "))
	}
	opts := []jwt.ParseOption{
		jwt.WithKey(alg, key),
		jwt.WithValidate(true),
		jwt.WithClock(jwt.ClockFunc(v.cfg.Now)),
		jwt.WithAcceptableSkew(v.cfg.Skew),
		jwt.WithAudience(v.cfg.Audience),
		// A token without an expiry would be good for ever.
		jwt.WithRequiredClaim(jwt.ExpirationKey),
	}
	if v.cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.cfg.Issuer))
	}
	tok, err := jwt.ParseString(token, opts...)
	if err != nil {
		return Identity{}, v.refusal(err)
	}
	return v.identity(tok)
}

// refusal words a refused token's error for the caller.
func (v *JWTVerifier) refusal(err error) error {
	switch {
	case errors.Is(err, jws.VerifyError()):
		return errors.New("the JWT's signature does not verify")
	case errors.Is(err, jwt.TokenExpiredError()):
		return errors.New("the JWT has expired (exp)")
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return errors.New("the JWT is not valid yet (nbf)")
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return errors.New("the JWT was issued in the future (iat)")
	case errors.Is(err, jwt.InvalidAudienceError()):
		return fmt.Errorf("the JWT's audience (aud) does not include %q", v.cfg.Audience)
	case errors.Is(err, jwt.InvalidIssuerError()):
		return fmt.Errorf("the JWT's issuer (iss) is not %q", v.cfg.Issuer)
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return errors.New("the JWT has no expiry (exp): a token without one would be good for ever")
	}
	return fmt.Errorf("the bearer token is not a well-formed JWT: %v", err)
}

// identity reads the identity from a verified token's claims.
func (v *JWTVerifier) identity(tok jwt.Token) (Identity, error) {
	var id Identity
	var err error
	if id.Principal, err = stringClaim(tok, v.cfg.PrincipalClaim); err != nil {
		return Identity{}, err
	}
	if err := CheckPrincipal("the JWT's "+v.cfg.PrincipalClaim+" claim", id.Principal); err != nil {
		return Identity{}, err
	}
	if id.Tenant, err = stringClaim(tok, v.cfg.TenantClaim); err != nil {
		return Identity{}, err
	}
	if err := CheckTenant("the JWT's "+v.cfg.TenantClaim+" claim", id.Tenant); err != nil {
		return Identity{}, err
	}
	var roles any
	if tok.Has(v.cfg.RolesClaim) {
		if err := tok.Get(v.cfg.RolesClaim, &roles); err != nil {
			return Identity{}, fmt.Errorf("the JWT's %s claim: %v", v.cfg.RolesClaim, err)
		}
	}
	switch rs := roles.(type) {
	case nil:
	case []any:
		for _, r := range rs {
			s, ok := r.(string)
			if !ok {
				return Identity{}, fmt.Errorf("the JWT's %s claim is not an array of strings", v.cfg.RolesClaim)
			}
			id.Roles = append(id.Roles, s)
		}
	case []string:
		id.Roles = rs
	default:
		return Identity{}, fmt.Errorf("the JWT's %s claim is not an array of strings", v.cfg.RolesClaim)
	}
	id.Verified = true
	return id, nil
}

// stringClaim returns tok's claim name, "" when it has none.
func stringClaim(tok jwt.Token, name string) (string, error) {
	if !tok.Has(name) {
		return "", nil
	}
	var v any
	if err := tok.Get(name, &v); err != nil {
		return "", fmt.Errorf("the JWT's %s claim: %v", name, err)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("the JWT's %s claim is not a string", name)
	}
	return s, nil
}

// algorithmsFor returns the signature algorithms key may verify: its own
// alg when it names one; else those of its type (asymmetric keys only: a
// JWKS publishes public keys, and an HMAC secret there would be shared
// with anyone who reads it).
func algorithmsFor(key jwk.Key) []jwa.SignatureAlgorithm {
	if a, ok := key.Algorithm(); ok {
		if s, ok := jwa.LookupSignatureAlgorithm(a.String()); ok && s != jwa.NoSignature() && !s.IsSymmetric() {
			return []jwa.SignatureAlgorithm{s}
		}
		return nil
	}
	switch k := key.(type) {
	case jwk.RSAPublicKey:
		return []jwa.SignatureAlgorithm{jwa.RS256(), jwa.RS384(), jwa.RS512(), jwa.PS256(), jwa.PS384(), jwa.PS512()}
	case jwk.ECDSAPublicKey:
		crv, _ := k.Crv()
		switch crv {
		case jwa.P256():
			return []jwa.SignatureAlgorithm{jwa.ES256()}
		case jwa.P384():
			return []jwa.SignatureAlgorithm{jwa.ES384()}
		case jwa.P521():
			return []jwa.SignatureAlgorithm{jwa.ES512()}
		}
	case jwk.OKPPublicKey:
		if crv, _ := k.Crv(); crv == jwa.Ed25519() {
			return []jwa.SignatureAlgorithm{jwa.EdDSA(), jwa.EdDSAEd25519()}
		}
	}
	return nil
}

func algNames(algs []jwa.SignatureAlgorithm) []string {
	if len(algs) == 0 {
		return []string{"nothing (it is not a public signing key)"}
	}
	out := make([]string, len(algs))
	for i, a := range algs {
		out[i] = a.String()
	}
	return out
}
