package rpc

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/steward-run/steward/pkg/errs"
)

// MaxPrincipalLen bounds a principal's name in bytes.
const MaxPrincipalLen = 256

// reservedPrincipals are the names Steward records its own actions
// under, and the one it gives a caller who names nobody: a caller who
// took one would pass their acts off as Steward's.
var reservedPrincipals = []string{"steward", "anonymous"}

// CheckPrincipal reports whether p may name a caller: valid UTF-8 of at
// most MaxPrincipalLen bytes, with no control or invisible characters (a
// principal is printed in receipts and terminals, and must look like what
// it is) and none of Steward's own names. field names where p came from, for the error.
func CheckPrincipal(field, p string) error {
	switch {
	case p == "":
		return errs.Field(field, "is empty")
	case !utf8.ValidString(p):
		return errs.Field(field, "is not valid UTF-8")
	case len(p) > MaxPrincipalLen:
		return errs.Field(field, "is %d bytes; the limit is %d", len(p), MaxPrincipalLen)
	}
	if err := visible(field, p); err != nil {
		return err
	}
	for _, name := range reservedPrincipals {
		if strings.EqualFold(p, name) {
			return errs.Field(field, "%q is reserved for Steward itself", name)
		}
	}
	return nil
}

// principalFrom reads the Steward-Principal header: "" when absent.
func principalFrom(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", errs.Field(PrincipalHeader, "is sent %d times; send it once", len(values))
	}
	p := strings.TrimSpace(values[0])
	if p == "" {
		return "", nil
	}
	if err := CheckPrincipal(PrincipalHeader, p); err != nil {
		return "", err
	}
	return p, nil
}

// MaxTenantLen bounds a tenant's name in bytes.
const MaxTenantLen = 128

// CheckTenant reports whether t may name a tenant: empty (the default
// tenant), or valid UTF-8 of at most MaxTenantLen bytes with no control or
// invisible characters, for the reasons a principal has none. field names
// where t came from, for the error.
func CheckTenant(field, t string) error {
	switch {
	case t == "":
		return nil
	case !utf8.ValidString(t):
		return errs.Field(field, "is not valid UTF-8")
	case len(t) > MaxTenantLen:
		return errs.Field(field, "is %d bytes; the limit is %d", len(t), MaxTenantLen)
	}
	return visible(field, t)
}

// visible refuses s if it holds a control or invisible character.
func visible(field, s string) error {
	for _, r := range s {
		// Invisible characters (format, bidi, line and paragraph
		// separators) would let "steward\u200b" pass for Steward.
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Bidi_Control) {
			return errs.Field(field, "contains the invisible or control character %U", r)
		}
	}
	return nil
}
