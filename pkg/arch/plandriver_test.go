package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanDriverStandsApart: the plan driver reaches the control plane
// only through its Host interface, so it imports nothing of
// services/control.
func TestPlanDriverStandsApart(t *testing.T) {
	dir := filepath.Join("..", "..", "services", "control", "plandriver")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no plan driver at %s (%v)", dir, err)
	}
	for _, path := range files {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			to := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(to, module+"services/") {
				t.Errorf("%s imports %s: the plan driver reaches the control plane only through plandriver.Host", path, to)
			}
		}
	}
}

// stepKindTests are the Step accessors whose presence tells a step's kind.
var stepKindTests = map[string]bool{"GetSubTask": true, "GetCheckpoint": true, "GetWait": true, "GetForeach": true, "GetAction": true}

// TestStepKindToldApartOnce: a new step kind is one entry in the plan
// driver's table (plandriver.kindOf), so no code of the control plane but
// that function tells the kinds of step apart — by testing which of a
// step's kind fields is set (x.GetWait() != nil and the like) or by a
// type switch on the Step's oneof. (Governance describes each step to
// policy by its kind, planinput.go: another plane, which the driver's
// table cannot serve.)
func TestStepKindToldApartOnce(t *testing.T) {
	root := filepath.Join("..", "..", "services", "control")
	places := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if testsStepKind(fn.Body) {
				places[filepath.ToSlash(filepath.Join(filepath.Dir(path), fn.Name.Name))] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "../../services/control/plandriver/kindOf"
	if len(places) != 1 || !places[want] {
		t.Errorf("the kind of a step is told apart in %v; want only in %s (add a kind to its table)", keys(places), want)
	}
}

// testsStepKind reports whether body compares a step kind accessor's
// result with nil, or type-switches on a Step oneof wrapper.
func testsStepKind(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.NEQ || n.Op == token.EQL) && isNil(n.Y) && isKindAccessor(n.X) {
				found = true
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if star, ok := e.(*ast.StarExpr); ok {
					if sel, ok := star.X.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Step_") {
						found = true
					}
				}
			}
		}
		return !found
	})
	return found
}

func isNil(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "nil"
}

func isKindAccessor(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && stepKindTests[sel.Sel.Name]
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
