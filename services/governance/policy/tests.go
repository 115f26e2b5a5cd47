package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestTimeout bounds one Rego test: a test that runs away fails rather
// than hangs.
const TestTimeout = 30 * time.Second

// TestResult is one Rego test of a bundle and how it went.
type TestResult struct {
	// Name is the test's rule, with its package: data.steward.policy.test_reads_run.
	Name string
	// File and Line are where the test is.
	File string
	Line int
	// Outcome is TestPass, TestFail, TestError (the test could not be
	// evaluated: Error says why) or TestSkip (a todo_test_).
	Outcome  string
	Error    string
	Duration time.Duration
}

// Test outcomes.
const (
	TestPass  = "pass"
	TestFail  = "fail"
	TestError = "error"
	TestSkip  = "skip"
)

// RunTests runs the Rego tests (test_ rules, in any .rego file, usually
// the _test.rego ones) of the bundle in dir against the bundle's policy:
// the .rego files Load compiles, in dir and its subdirectories, and
// nothing else — no data files, which Load does not read either. The
// results come in the order of their files and lines. A bundle with no
// tests is an error, as is one that does not compile.
func RunTests(ctx context.Context, dir string) ([]TestResult, error) {
	modules, err := readModules(dir)
	if err != nil {
		return nil, fmt.Errorf("policy tests %s: %w", dir, err)
	}
	ch, err := tester.NewRunner().
		SetDefaultRegoVersion(ast.RegoV1).
		SetTimeout(TestTimeout).
		SetModules(modules).
		RunTests(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("policy tests %s: %w", dir, err)
	}
	var results []TestResult
	for r := range ch {
		results = append(results, testResult(r))
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("policy tests %s: no tests (rules named test_…)", dir)
	}
	slices.SortStableFunc(results, func(a, b TestResult) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return results, nil
}

// readModules parses every .rego file under dir, tests and policy alike.
func readModules(dir string) (map[string]*ast.Module, error) {
	fsys := os.DirFS(dir)
	modules := map[string]*ast.Module{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, ".rego") {
			return err
		}
		content, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		m, err := ast.ParseModuleWithOpts(path, string(content), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return err
		}
		modules[path] = m
		return nil
	})
	if err == nil && len(modules) == 0 {
		err = errors.New("no .rego files")
	}
	return modules, err
}

func testResult(r *tester.Result) TestResult {
	t := TestResult{Name: r.Package + "." + r.Name, Duration: r.Duration, Outcome: TestPass}
	if r.Location != nil {
		t.File, t.Line = r.Location.File, r.Location.Row
	}
	switch {
	case r.Error != nil:
		t.Outcome, t.Error = TestError, r.Error.Error()
	case r.Skip:
		t.Outcome = TestSkip
	case r.Fail:
		t.Outcome = TestFail
	}
	return t
}
