package eventlog

import (
	"fmt"
	"strconv"
	"strings"
)

// TenantToken returns the subject token that names a tenant in a tenant's
// tool registration (steward.tool.<name>.=<tenant>.<type>) or breaker
// change (steward.service.=<tenant>.<key>.<type>): "=" and the tenant's
// name, with every byte other than an ASCII letter, digit, '-' or '_'
// written =XX in hex. A tenant's name may hold '.', '*', '>' or spaces,
// which a subject token may not; and the leading "=" is a character that
// no tool name, service key, task id or event type has, so that a token
// never reads as one of them, nor two tenants' tokens as one (the
// escaping is one to one). The default tenant ("") has no token: its
// subjects are those Steward wrote before it had tenants.
func TenantToken(tenant string) string {
	if tenant == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('=')
	for i := 0; i < len(tenant); i++ {
		c := tenant[i]
		if plainByte(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "=%02X", c)
		}
	}
	return b.String()
}

// TenantOfToken undoes TenantToken; ok is false for a token it did not
// make.
func TenantOfToken(token string) (tenant string, ok bool) {
	rest, ok := strings.CutPrefix(token, "=")
	if !ok || rest == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case plainByte(c):
			b.WriteByte(c)
		case c == '=' && i+2 < len(rest):
			n, err := strconv.ParseUint(rest[i+1:i+3], 16, 8)
			if err != nil || plainByte(byte(n)) || strings.ToUpper(rest[i+1:i+3]) != rest[i+1:i+3] {
				return "", false // not the one spelling TenantToken writes
			}
			b.WriteByte(byte(n))
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

func plainByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
