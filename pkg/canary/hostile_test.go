package canary

import (
	"encoding/json"
	"errors"
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

// TestParseRefusesAToolNameStewardWould: a tool name Steward would refuse
// (or one that is no path: "re{fund" made the stubs' mux panic before
// anything started) is refused by its field.
func TestParseRefusesAToolNameStewardWould(t *testing.T) {
	for _, name := range []string{"re{fund", "re/fund", "refund ", strings.Repeat("r", 65)} {
		m := example(t)
		at(m, "tools", 1, "contract").(map[string]any)["name"] = name
		at(m, "samples", 0, "steps", 2, "propose").(map[string]any)["tool"] = name
		data, _ := json.Marshal(m)
		var fe *FieldError
		if _, err := Parse(data); !errors.As(err, &fe) || fe.Path != "tools[1].contract.name" {
			t.Errorf("%q: got %v", name, err)
		}
	}
}
