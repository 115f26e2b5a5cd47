package arch

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoPackageMutableState: a package-level var in cmd/, pkg/ or services/
// holds an error or a read-only value (a table, a compiled regexp, an
// embed.FS, a sync.OnceValue(s) of a pure constructor), never state that one
// caller's work changes under another's. The rule, checked on the syntax
// alone:
//   - a var is refused if its type is a channel, a sync.Map, a mutex, a
//     sync.WaitGroup or an atomic, written out or made (make(chan …),
//     sync.Map{}), or a struct type holding one;
//   - a var is refused if its package assigns to it, to an element or field
//     of it (x = …, x[k] = …, x.f = …, x++), or passes its address (&x)
//     anywhere after its declaration.
//
// It cannot see a read-only-looking var mutated through a method (a
// registry's Register); such values are built per process and passed in.
// A var set by the linker (-ldflags -X) is never assigned in code and so
// passes: that is its one writer, before main.
func TestNoPackageMutableState(t *testing.T) {
	byDir := map[string][]source{}
	for _, s := range sources(t, "cmd", "pkg", "services") {
		dir := filepath.Dir(s.rel)
		byDir[dir] = append(byDir[dir], s)
	}
	for _, files := range byDir {
		vars := map[string]string{} // name → file that declares it
		for _, s := range files {
			for _, decl := range s.file.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok || gen.Tok != token.VAR {
					continue
				}
				for _, spec := range gen.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if name.Name == "_" {
							continue
						}
						vars[name.Name] = s.rel
						var value ast.Expr
						if i < len(vs.Values) {
							value = vs.Values[i]
						}
						if why := mutableType(vs.Type, value); why != "" {
							t.Errorf("%s: package-level var %s is %s", s.rel, name.Name, why)
						}
					}
				}
			}
		}
		for _, s := range files {
			for _, decl := range s.file.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				for name, how := range writes(fn.Body) {
					if at, ok := vars[name]; ok && !shadowed(fn, name) {
						t.Errorf("%s: package-level var %s (%s) is %s in %s", s.rel, name, at, how, fn.Name.Name)
					}
				}
			}
		}
	}
}

// mutableType says why a var of this declared type or initial value is
// state ("" if it is not).
func mutableType(typ, value ast.Expr) string {
	if typ == nil && value != nil {
		switch v := value.(type) {
		case *ast.CompositeLit:
			typ = v.Type
		case *ast.CallExpr:
			if id, ok := v.Fun.(*ast.Ident); ok && id.Name == "make" && len(v.Args) > 0 {
				typ = v.Args[0]
			}
		}
	}
	if typ == nil {
		return ""
	}
	switch e := typ.(type) {
	case *ast.ChanType:
		return "a channel"
	case *ast.SelectorExpr:
		pkg, _ := e.X.(*ast.Ident)
		if pkg != nil && pkg.Name == "atomic" {
			return "an atomic"
		}
		if pkg != nil && pkg.Name == "sync" && e.Sel.Name != "Once" && !strings.HasPrefix(e.Sel.Name, "OnceValue") {
			return "a sync." + e.Sel.Name
		}
	case *ast.StructType:
		for _, f := range e.Fields.List {
			if why := mutableType(f.Type, nil); why != "" {
				return "a struct holding " + why
			}
		}
	}
	return ""
}

// writes names the identifiers a function body assigns to (directly, by
// element or by field), increments, or takes the address of.
func writes(body *ast.BlockStmt) map[string]string {
	out := map[string]string{}
	ast.Inspect(body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				return true
			}
			for _, lhs := range s.Lhs {
				if name := base(lhs); name != "" {
					out[name] = "assigned"
				}
			}
		case *ast.IncDecStmt:
			if name := base(s.X); name != "" {
				out[name] = "incremented"
			}
		case *ast.UnaryExpr:
			if s.Op == token.AND {
				if name := base(s.X); name != "" {
					out[name] = "addressed (&)"
				}
			}
		}
		return true
	})
	return out
}

// base is the variable an assignable expression writes through: x for x,
// x[k], x.f and (*x).
func base(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.Ident:
			return e.Name
		case *ast.IndexExpr:
			x = e.X
		case *ast.SelectorExpr:
			x = e.X
		case *ast.StarExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		default:
			return ""
		}
	}
}

// shadowed says whether a function declares name itself (a parameter, a
// result, a receiver or a local), so that a write to it is not the
// package's var.
func shadowed(fn *ast.FuncDecl, name string) bool {
	found := false
	for _, fl := range []*ast.FieldList{fn.Recv, fn.Type.Params, fn.Type.Results} {
		if fl == nil {
			continue
		}
		for _, f := range fl.List {
			for _, n := range f.Names {
				found = found || n.Name == name
			}
		}
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				for _, l := range s.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name == name {
						found = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, n := range s.Names {
				found = found || n.Name == name
			}
		case *ast.RangeStmt:
			if s.Tok == token.DEFINE {
				for _, e := range []ast.Expr{s.Key, s.Value} {
					if id, ok := e.(*ast.Ident); ok && id.Name == name {
						found = true
					}
				}
			}
		case *ast.FuncLit:
			for _, f := range s.Type.Params.List {
				for _, n := range f.Names {
					found = found || n.Name == name
				}
			}
		}
		return true
	})
	return found
}
