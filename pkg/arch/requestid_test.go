package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/requestid"
)

// TestOneRequestIDMechanism: every command that takes a request id is
// answered by requestid.Begin. Each command name (requestid.Commands) is
// passed as the command to Begin, directly or through the control plane's
// claimRequestID/claimRequestIDFor; no plane claims a request id by hand
// (requestid.Claim, UseOf) or types a command name as a string. It cannot
// see that a name is passed in the handler of its own RPC: the e2e and
// plane tests of each command's retries check that.
func TestOneRequestIDMechanism(t *testing.T) {
	commands := requestid.Commands()
	begun := map[string]bool{}
	root := filepath.Join("..", "..")
	for _, dir := range []string{"services", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if name, ok := beginsRequest(n); ok && len(n.Args) > 3 {
						if c, ok := requestidName(n.Args[commandArg(name)]); ok {
							begun[c] = true
						}
					}
					if c, ok := requestidName(n.Fun); ok && (c == "Claim" || c == "UseOf") {
						t.Errorf("%s claims a request id by hand (requestid.%s): use requestid.Begin", path, c)
					}
				case *ast.BasicLit:
					if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && slices.Contains(commands, s) {
						t.Errorf("%s types the command name %q: use requestid.%s", path, s, s)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range commands {
		if !begun[c] {
			t.Errorf("no call of requestid.Begin (or claimRequestID) is for command %s", c)
		}
	}
}

// beginsRequest reports whether call begins a request id's use, and the
// name of what it calls.
func beginsRequest(call *ast.CallExpr) (string, bool) {
	if name, ok := requestidName(call.Fun); ok {
		return name, name == "Begin"
	}
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
		return sel.Sel.Name, strings.HasPrefix(sel.Sel.Name, "claimRequestID")
	}
	return "", false
}

// commandArg is where the command is among the arguments of what
// beginsRequest found: Begin(ctx, log, scope, command, …) or
// claimRequestID(ctx, principal, command, …).
func commandArg(name string) int {
	if name == "Begin" {
		return 3
	}
	return 2
}

// requestidName is the name x selects from package requestid, if it does.
func requestidName(x ast.Expr) (string, bool) {
	sel, ok := x.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return sel.Sel.Name, ok && pkg.Name == "requestid"
}
