package adapter_test

import (
	"context"
	"strings"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
)

func TestSetFor(t *testing.T) {
	httpA := adapter.NewHTTP(nil)
	builtinA := newBuiltin(t, adapter.BuiltinConfig{SandboxDir: t.TempDir()})
	full := adapter.Set{HTTP: httpA, Builtin: builtinA}
	tests := []struct {
		name    string
		set     adapter.Set
		tool    *stewardv1.ToolContract
		want    adapter.Adapter
		wantErr string
	}{
		{name: "http", set: full, tool: httpTool("http://tool/call", "", 0), want: httpA},
		{name: "builtin", set: full, tool: builtinTool(adapter.KindNoop), want: builtinA},
		{name: "no contract", set: full, tool: nil, wantErr: "no tool contract"},
		{name: "no endpoint", set: full, tool: &stewardv1.ToolContract{Name: "t", Version: "1"}, wantErr: "has no endpoint"},
		{name: "http without url", set: full, tool: httpTool("", "", 0), wantErr: "no url"},
		{name: "builtin without kind", set: full, tool: builtinTool(""), wantErr: "no kind"},
		{name: "no http adapter", set: adapter.Set{Builtin: builtinA}, tool: httpTool("http://tool/call", "", 0), wantErr: "no http adapter"},
		{name: "no builtin adapter", set: adapter.Set{HTTP: httpA}, tool: builtinTool(adapter.KindNoop), wantErr: "no builtin adapter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.set.For(tt.tool)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("For picked %T, want %T", got, tt.want)
			}
		})
	}
}

// The adapter For picks is the one that works for the tool: a builtin noop
// through the Set succeeds end to end.
func TestSetForDispatches(t *testing.T) {
	set := adapter.Set{HTTP: adapter.NewHTTP(nil), Builtin: newBuiltin(t, adapter.BuiltinConfig{SandboxDir: t.TempDir()})}
	req := builtinRequest(t, adapter.KindNoop, "op-1", map[string]any{})
	a, err := set.For(req.Tool)
	if err != nil {
		t.Fatal(err)
	}
	if body := mustSucceed(t, a.Call(context.Background(), req)); string(body) != `{"ok":true}` {
		t.Errorf("body = %s", body)
	}
}
