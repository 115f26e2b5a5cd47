package e2e_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/steward-run/steward/cmd/steward/app"
)

// TestToolsFileFailsClosed starts the server with a --tools file whose
// contract leaves out something policy decides on, or names something the
// runtime cannot use: the server refuses to start, naming the file, the
// tool and the field, rather than registering the tool as the mildest kind.
func TestToolsFileFailsClosed(t *testing.T) {
	tests := []struct {
		name  string
		tool  string
		field string
	}{
		{"no data sensitivity", `{"name": "wire", "version": "1", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "builtin": {"kind": "noop"}}`, "contract.data_sensitivity"},
		{"service key the breaker cannot record", `{"name": "wire", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "serviceKey": "a.b", "builtin": {"kind": "noop"}}`, "contract.service_key"},
		{"no effect class", `{"name": "wire", "version": "1", "dataSensitivity": "DATA_SENSITIVITY_RESTRICTED", "builtin": {"kind": "noop"}}`, "contract.effect_class"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, "tools.json", `{"tools": [`+tt.tool+`]}`)
			m := app.NewServer(io.Discard, &testWriter{tb: t})
			if err := m.ParseFlags("dev", []string{"--addr", "127.0.0.1:0", "--data", dir, "--log-level", "warn", "--tools", path}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			err := m.Run(context.Background())
			if err == nil {
				t.Fatal("the server started with a tool that leaves out what policy decides on")
			}
			for _, want := range []string{path, "wire", tt.field} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to name %q", err, want)
				}
			}
		})
	}
}
