package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/steward-run/steward/pkg/rpc"
)

// JWTFlags say how bearer JWTs are verified: against the keys of a JWKS
// file or of an OpenID Connect issuer, for one audience, with the
// identity in the claims they name.
type JWTFlags struct {
	JWKS     string // FILE of public keys
	Issuer   string // URL of the issuer: discovery, unless JWKS is given; iss is checked
	Audience string
	// Claim names: the principal, the roles (an array of strings), the
	// tenant.
	PrincipalClaim, RolesClaim, TenantClaim string
}

// register adds the JWT flags to fs.
func (f *JWTFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.JWKS, "jwt-jwks", "", "JWKS `FILE` of the public keys bearer JWTs are signed with (see docs/auth.md)")
	fs.StringVar(&f.Issuer, "jwt-issuer", "", "OpenID Connect issuer `URL`: a JWT's iss must be it, and, without --jwt-jwks, its keys are found by discovery (URL/.well-known/openid-configuration) and refreshed")
	fs.StringVar(&f.Audience, "jwt-audience", "", "the `AUDIENCE` a JWT's aud must include; required with --jwt-jwks or --jwt-issuer")
	fs.StringVar(&f.PrincipalClaim, "jwt-principal-claim", rpc.DefaultPrincipalClaim, "the JWT `CLAIM` that names the caller")
	fs.StringVar(&f.RolesClaim, "jwt-roles-claim", rpc.DefaultRolesClaim, "the JWT `CLAIM` that lists the caller's roles, an array of strings")
	fs.StringVar(&f.TenantClaim, "jwt-tenant-claim", rpc.DefaultTenantClaim, "the JWT `CLAIM` that names the caller's tenant")
}

// on reports whether JWTs are verified.
func (f *JWTFlags) on() bool { return f.JWKS != "" || f.Issuer != "" }

// check reports flags that do not go together.
func (f *JWTFlags) check() error {
	switch {
	case !f.on() && f.Audience != "":
		return errors.New("--jwt-audience needs --jwt-jwks FILE or --jwt-issuer URL, which say where the keys that sign the tokens are")
	case f.on() && f.Audience == "":
		return errors.New("--jwt-audience is required with --jwt-jwks or --jwt-issuer: a token minted for another service must not pass for one minted for Steward")
	case f.on() && (f.PrincipalClaim == "" || f.RolesClaim == "" || f.TenantClaim == ""):
		return errors.New("--jwt-principal-claim, --jwt-roles-claim and --jwt-tenant-claim must not be empty")
	case f.Issuer != "" && f.JWKS == "":
		// Discovery and keys fetched in clear could be swapped on the way
		// for an attacker's.
		u, err := url.Parse(f.Issuer)
		switch {
		case err != nil || u.Host == "" || u.Scheme != "https" && u.Scheme != "http":
			return fmt.Errorf("--jwt-issuer: %q is not an https:// URL", f.Issuer)
		case u.Scheme == "http" && !loopback(net.JoinHostPort(u.Hostname(), "0")):
			return fmt.Errorf("--jwt-issuer: %s: keys are fetched over https only (http:// is for an issuer on this machine), since keys fetched in clear could be replaced on the way", f.Issuer)
		}
	}
	return nil
}

// verifier returns the JWT verifier the flags describe, nil when they
// describe none, and what to call to stop refreshing an issuer's keys.
func (f *JWTFlags) verifier(ctx context.Context) (*rpc.JWTVerifier, func(), error) {
	if !f.on() {
		return nil, func() {}, nil
	}
	cfg := rpc.JWTConfig{Audience: f.Audience, Issuer: f.Issuer, PrincipalClaim: f.PrincipalClaim, RolesClaim: f.RolesClaim, TenantClaim: f.TenantClaim}
	if f.JWKS != "" {
		keys, err := rpc.LoadJWKS(f.JWKS)
		if err != nil {
			return nil, nil, fmt.Errorf("--jwt-jwks: %w", err)
		}
		v, err := rpc.NewJWTVerifier(keys, cfg)
		return v, func() {}, err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	keys, err := rpc.DiscoverOIDC(dctx, f.Issuer, &http.Client{Timeout: 10 * time.Second})
	if err != nil {
		return nil, nil, fmt.Errorf("--jwt-issuer: %w", err)
	}
	v, err := rpc.NewJWTVerifier(keys, cfg)
	if err != nil {
		keys.Close()
		return nil, nil, err
	}
	return v, keys.Close, nil
}
