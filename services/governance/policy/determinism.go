package policy

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A decision must re-evaluate the same from its recorded input and the
// bundle's sources (docs/audit.md), so a bundle may not use a built-in
// whose answer is not recorded: one OPA marks nondeterministic (the
// network, the clock, chance, the running process: http.send,
// net.lookup_ip_addr, time.now_ns, rand.intn, uuid.rfc4122, opa.runtime,
// io.jwt's verifying and signing, json's schema checks that may fetch), or
// one that reads the clock unmarked (isRefused). The bundle compiles
// with capabilities that leave them out, so no way of naming one (a call,
// or `with f as http.send`) gets past the compiler: neither governance
// nor an auditor restoring an untrusted bundle makes a network call or
// reads the environment.

// isRefused reports whether a bundle may not use b. OPA does not mark the
// x509 chain checks, which verify at the time of the call unless told one.
func isRefused(b *ast.Builtin) bool {
	switch b.Name {
	case "crypto.x509.parse_and_verify_certificates", "crypto.x509.parse_and_verify_certificates_with_options":
		return true
	}
	return b.Nondeterministic
}

// capabilities are this OPA's, without the refused built-ins and with no
// host to fetch a schema from.
func capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion(ast.CapabilitiesRegoVersion(ast.RegoV1))
	kept := make([]*ast.Builtin, 0, len(c.Builtins))
	for _, b := range c.Builtins {
		if !isRefused(b) {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	c.AllowNet = []string{}
	return c
}

// explainRefusal names the first reference to a refused built-in in the
// bundle, by file, line and name, or returns compileErr: the compiler
// already refused it, but as an undefined function or an unsafe var.
// files are the bundle's policy files by path; origin prefixes the paths
// as compile does.
func explainRefusal(files map[string][]byte, origin string, compileErr error) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(origin, filepath.FromSlash(name))
		m, err := ast.ParseModuleWithOpts(path, string(files[name]), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			continue // the compile error reports it, with its position
		}
		if err := refusedRef(m); err != nil {
			return err
		}
	}
	return compileErr
}

// refusedRef returns an error for the first reference in m to a refused
// built-in: a call (http.send(x)), or a function named as a value
// (with f as http.send).
func refusedRef(m *ast.Module) error {
	var found error
	ast.WalkTerms(m, func(t *ast.Term) bool {
		ref, ok := t.Value.(ast.Ref)
		if !ok || found != nil {
			return found != nil
		}
		if b, ok := ast.BuiltinMap[ref.String()]; ok && isRefused(b) {
			found = fmt.Errorf("%s: built-in %s is refused in a policy bundle: its answer is not recorded, so the decision could not be re-evaluated offline", t.Location, ref)
		}
		return found != nil
	})
	return found
}
