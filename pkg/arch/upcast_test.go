package arch

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// olderShape is how code speaks of what an earlier build wrote to the log.
var olderShape = regexp.MustCompile(`(?i)\b(earlier build|older build|old ledger|from before)`)

// TestCompatibilityGathered: what a plane keeps for logs written by
// earlier builds lives in that package's upcast.go (docs/compatibility.md),
// one named rule each, so that no other non-test Go file of pkg/ or
// services/ speaks of an earlier build's shape in a branch of its own.
func TestCompatibilityGathered(t *testing.T) {
	for _, root := range []string{"pkg", "services"} {
		err := filepath.WalkDir(filepath.Join("..", "..", root), func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == "gen":
				return filepath.SkipDir
			case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || d.Name() == "upcast.go":
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(src), "\n") {
				if m := olderShape.FindString(line); m != "" {
					t.Errorf("%s:%d speaks of %q: a rule for an earlier build's log belongs in its package's upcast.go", path, i+1, m)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
