package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/steward-run/steward/pkg/access"
)

// Identity is an authenticated caller: who, and which roles they hold.
type Identity struct {
	Principal string   `json:"principal"`
	Roles     []string `json:"roles"`
	// Tenant is the tenant the caller belongs to: a token file entry's
	// "tenant" or a JWT's tenant claim; "" is the default tenant. Every
	// task belongs to its creator's tenant, and a caller of another
	// tenant finds no such task (docs/tenants.md).
	Tenant string `json:"tenant,omitempty"`
	// Verified is set when a token proved the identity; a principal named
	// in the Steward-Principal header is not verified.
	Verified bool `json:"-"`
}

// HasRole reports whether the identity holds any of roles, the roles
// Steward names (pkg/access). An admin holds every one of them.
func (id Identity) HasRole(roles ...string) bool {
	return slices.Contains(id.Roles, access.Admin) || id.Holds(roles...)
}

// Holds reports whether the identity was granted any of roles by name,
// admin not counting as each: for the roles a policy names per approval,
// whose vote the record shows as a holder's judgement.
func (id Identity) Holds(roles ...string) bool {
	for _, r := range roles {
		if slices.Contains(id.Roles, r) {
			return true
		}
	}
	return false
}

// Tokens maps bearer tokens to identities: the simple static scheme that
// stands in for real authentication for now.
type Tokens map[string]Identity

// tokensFile is the format of an --auth file.
type tokensFile struct {
	Tokens []struct {
		Token string `json:"token"`
		Identity
	} `json:"tokens"`
}

// LoadTokens reads a token file:
//
//	{"tokens": [{"token": "…", "principal": "user:bo", "roles": ["authorizer"], "tenant": "acme"}]}
func LoadTokens(path string) (Tokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseTokens(path, data)
}

// parseTokens reads the tokens of a token file at path holding data.
func parseTokens(path string, data []byte) (Tokens, error) {
	// A misspelt field is an error: ignored, it would grant nothing,
	// silently ("role" for "roles"; "token" for "tokens", no token).
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f tokensFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", path)
	}
	out := Tokens{}
	for i, t := range f.Tokens {
		switch {
		case len(t.Token) < 16:
			return nil, fmt.Errorf("%s: tokens[%d]: a token must be at least 16 characters", path, i)
		}
		if err := CheckPrincipal(fmt.Sprintf("tokens[%d].principal", i), t.Principal); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := CheckTenant(fmt.Sprintf("tokens[%d].tenant", i), t.Tenant); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if _, dup := out[t.Token]; dup {
			return nil, fmt.Errorf("%s: tokens[%d]: the token appears twice", path, i)
		}
		out[t.Token] = t.Identity
	}
	return out, nil
}
