// Package arch holds tests of the code's shape: which package may import
// which.
package arch

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/steward-run/steward/"

// TestImportsFlowOneWay: cmd → services → pkg, and no plane imports
// another. The planes meet only on the log (DESIGN, rule 1).
func TestImportsFlowOneWay(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".bin" || d.Name() == "gen") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		from := filepath.ToSlash(filepath.Dir(rel))
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			to, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module)
			if !ok {
				continue
			}
			if why := forbidden(from, to); why != "" {
				t.Errorf("%s imports %s: %s", rel, to, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// forbidden says why package from may not import package to ("" if it may).
// A plane's tests are held to it too: a test that runs several planes
// together belongs in e2e.
func forbidden(from, to string) string {
	layer := func(p string) string { return strings.SplitN(p, "/", 2)[0] }
	plane := func(p string) string {
		parts := strings.SplitN(p, "/", 3)
		if len(parts) < 2 {
			return ""
		}
		return parts[1]
	}
	switch {
	case layer(from) == "pkg" && (layer(to) == "services" || layer(to) == "cmd"):
		return "pkg is below services and cmd"
	case layer(from) == "services" && layer(to) == "cmd":
		return "services are below cmd"
	case layer(from) == "services" && layer(to) == "services" && plane(from) != plane(to):
		return "a plane never imports another; they meet on the log"
	}
	return ""
}

// TestTheAuditorNeedsNoBus: the offline auditor replays an export with the
// fold alone, without NATS or Prometheus in the binary.
func TestTheAuditorNeedsNoBus(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"pkg/audit").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "nats-io") || strings.Contains(dep, "prometheus") {
			t.Errorf("pkg/audit depends on %s", dep)
		}
	}
}

func TestForbiddenNamesEachRule(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		allowed  bool
	}{
		{"pkg/task", "pkg/event", true},
		{"pkg/task", "services/control", false},
		{"pkg/rpc", "cmd/steward/app", false},
		{"services/control", "cmd/steward/app", false},
		{"services/control", "services/governance", false},
		{"services/execution", "services/execution/adapter", true},
		{"services/execution", "services/governance/policy", false},
		{"e2e", "services/governance", true},
		{"cmd/steward/app", "services/state", true},
	} {
		if got := forbidden(tc.from, tc.to) == ""; got != tc.allowed {
			t.Errorf("%s → %s: allowed %v, want %v", tc.from, tc.to, got, tc.allowed)
		}
	}
}
