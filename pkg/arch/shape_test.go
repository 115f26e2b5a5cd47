package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// source is one parsed non-test, non-generated .go file of the module.
type source struct {
	rel  string // slash path from the module root
	fset *token.FileSet
	file *ast.File
}

// sources parses the non-test, non-generated .go files under the given
// top-level directories of the module.
func sources(t *testing.T, dirs ...string) []source {
	t.Helper()
	root := filepath.Join("..", "..")
	var out []source
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "gen" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			if ast.IsGenerated(f) {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, source{rel: filepath.ToSlash(rel), fset: fset, file: f})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

const (
	maxFileLines = 400
	maxFuncLines = 80
	maxMethods   = 50
)

// sizeAllowed lists the files and functions ("path" or "path:Func") that may
// pass the size limits, each with why. Keep it empty if at all possible.
var sizeAllowed = map[string]string{}

// TestSizes: no non-test, non-generated file is over 400 lines and no
// function (or method, or function literal at package level) over 80 lines,
// measured from its first to its last line. A long file or function is a
// sign of more than one idea in one place; split it by idea.
func TestSizes(t *testing.T) {
	for _, s := range sources(t, "cmd", "pkg", "services", "bench") {
		if n := s.fset.Position(s.file.End()).Line; n > maxFileLines && sizeAllowed[s.rel] == "" {
			t.Errorf("%s: %d lines, over %d", s.rel, n, maxFileLines)
		}
		for _, decl := range s.file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				name = receiverBase(fn.Recv.List[0].Type) + "." + name
			}
			n := s.fset.Position(fn.End()).Line - s.fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines && sizeAllowed[s.rel+":"+name] == "" {
				t.Errorf("%s: %s is %d lines, over %d", s.rel, name, n, maxFuncLines)
			}
		}
	}
}

// receiverBase is the name of a method receiver's base type: T for T, *T,
// T[K] and *T[K].
func receiverBase(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return fmt.Sprint(x)
		}
	}
}

// TestMethodCounts: no type in services/ has more than 50 methods, counted
// per receiver base type across its package's non-test files. A type that
// large has stopped being one idea: the plane's parts (the plan driver,
// recovery, delegation, results) are types of their own that it holds.
func TestMethodCounts(t *testing.T) {
	count := map[string]int{} // "dir.Type" → methods
	for _, s := range sources(t, "services") {
		for _, decl := range s.file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil && len(fn.Recv.List) == 1 {
				count[filepath.Dir(s.rel)+"."+receiverBase(fn.Recv.List[0].Type)]++
			}
		}
	}
	types := make([]string, 0, len(count))
	for typ := range count {
		types = append(types, typ)
	}
	sort.Strings(types)
	for _, typ := range types {
		if count[typ] > maxMethods {
			t.Errorf("%s has %d methods, over %d", typ, count[typ], maxMethods)
		}
	}
}
