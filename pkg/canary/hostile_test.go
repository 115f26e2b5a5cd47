package canary

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadBoundsTheFile: a definition or a baseline past MaxFileBytes is
// refused before it is read whole, naming the bound.
func TestLoadBoundsTheFile(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.json")
	pad := strings.Repeat(" ", MaxFileBytes)
	if err := os.WriteFile(huge, []byte(`{"name":"refunds"`+pad+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(huge); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("definition: got %v", err)
	}
	if _, err := LoadBaseline(huge, "refunds"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("baseline: got %v", err)
	}
}
