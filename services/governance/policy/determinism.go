package policy

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
)

// refusedBuiltin says why a bundle may not call name, or "". A decision
// must re-evaluate the same from its recorded input and the bundle's
// sources (docs/audit.md): a built-in whose answer depends on the network,
// the clock, chance or the running process (OPA marks them
// nondeterministic: http.send, net.lookup_ip_addr, time.now_ns, rand.intn,
// uuid.rfc4122, opa.runtime, io.jwt's verifying and signing, json's schema
// checks that may fetch) is not recorded, so it is refused at load.
func refusedBuiltin(name string) string {
	if b, ok := ast.BuiltinMap[name]; ok && b.Nondeterministic {
		return "its answer is not recorded, so the decision could not be re-evaluated offline"
	}
	return ""
}

// checkDeterministic refuses a bundle whose policy calls a refused
// built-in, naming the file, line and built-in. files are the bundle's
// policy files by path; origin prefixes the paths as compile does.
func checkDeterministic(files map[string][]byte, origin string) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(origin, filepath.FromSlash(name))
		m, err := ast.ParseModuleWithOpts(path, string(files[name]), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			continue // compile reports it, with its position
		}
		if err := refusedCall(m); err != nil {
			return err
		}
	}
	return nil
}

// refusedCall returns an error for the first call in m of a refused
// built-in: a call as an expression (http.send(x, y)) or as a term
// (y := http.send(x)).
func refusedCall(m *ast.Module) error {
	var found error
	check := func(ref ast.Ref, at *ast.Location) {
		if found != nil || ref == nil {
			return
		}
		if why := refusedBuiltin(ref.String()); why != "" {
			found = fmt.Errorf("%s: built-in %s is refused in a policy bundle: %s", at, ref, why)
		}
	}
	ast.WalkExprs(m, func(e *ast.Expr) bool {
		if e.IsCall() {
			check(e.Operator(), e.Location)
		}
		return found != nil
	})
	ast.WalkTerms(m, func(t *ast.Term) bool {
		if c, ok := t.Value.(ast.Call); ok && len(c) > 0 {
			if ref, ok := c[0].Value.(ast.Ref); ok {
				check(ref, t.Location)
			}
		}
		return found != nil
	})
	return found
}
