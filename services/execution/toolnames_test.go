package execution_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestToolNamesAreOneWithoutCase: Lookup beside lookup reads as one tool
// to an approver, so a name that differs from one a tenant sees only in
// case is refused — its own, a global one, or, for a global name, a
// tenant's — naming the tool held and no tenant. Another tenant's tool,
// which the tenant never sees, does not count. Found by the review of
// issue 27 (finding 7).
func TestToolNamesAreOneWithoutCase(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	register := func(tenant, name string) error {
		_, _, err := b.plane.Register(context.Background(), tenant, "admin", ts.Contract(name, callPath))
		return err
	}
	for _, r := range []struct{ tenant, name string }{{"", "lookup"}, {"acme", "deploy"}, {"beta", "Deploy"}} {
		if err := register(r.tenant, r.name); err != nil {
			t.Fatalf("tenant %q registers %s: %v", r.tenant, r.name, err)
		}
	}
	for _, c := range []struct{ tenant, name, held string }{
		{"acme", "Lookup", "lookup"},
		{"", "LOOKUP", "lookup"},
		{"acme", "DEPLOY", "deploy"},
		{"", "deploy", "Deploy"},
	} {
		err := register(c.tenant, c.name)
		if !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), `"`+c.held+`"`) || !strings.Contains(err.Error(), "case") {
			t.Errorf("tenant %q registers %s beside %s: %v; want already exists naming %s", c.tenant, c.name, c.held, err, c.held)
		}
		if err != nil && (strings.Contains(err.Error(), "acme") || strings.Contains(err.Error(), "beta")) {
			t.Errorf("tenant %q registers %s: %v names a tenant", c.tenant, c.name, err)
		}
	}
}

// TestReservedToolNamesAreNoTenants: a name the platform reserved
// (Config.ReservedTools, or any in the --tools file) is refused to every
// tenant, in any case. A --tools tool whose name a tenant held first is
// left out with a warning naming both, and the rest of the file is
// registered: the start goes on. Found by the review of issue 27
// (finding 7), where such a file stopped the start.
func TestReservedToolNamesAreNoTenants(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	var logs stewardtest.LogBuffer
	b.plane.Stop()
	b.cfg.ReservedTools = []string{"billing"}
	b.logger = slog.New(slog.NewTextHandler(&logs, nil))
	b.start()
	ts := startTool(t)
	ctx := context.Background()
	if _, _, err := b.plane.Register(ctx, "acme", "admin", ts.Contract("notify", callPath)); err != nil {
		t.Fatal(err)
	}
	file := `{"tools": [` + contractJSON(t, ts, "notify") + `,` + contractJSON(t, ts, "search") + `]}`
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.plane.RegisterFile(ctx, path); err != nil {
		t.Fatalf("a --tools file with a name acme holds: %v; want its other tools registered, the start going on", err)
	}
	if w := logs.String(); !strings.Contains(w, "level=WARN") || !strings.Contains(w, "notify@1") || !strings.Contains(w, "tenant=acme") {
		t.Errorf("the clash is not reported naming the tool and the tenant; log:\n%s", w)
	}
	if _, err := b.Tools.Get("", "search", ""); err != nil {
		t.Errorf("the rest of the file: %v", err)
	}
	if e, err := b.Tools.Get("acme", "notify", ""); err != nil || e.Tool.Tenant != "acme" {
		t.Errorf("acme's notify after the clash: %v, %v; want acme's, still", e, err)
	}
	if _, err := b.Tools.Get("beta", "notify", ""); err == nil {
		t.Errorf("the platform's notify was registered over acme's")
	}
	for _, name := range []string{"billing", "Billing", "notify", "NOTIFY"} {
		_, _, err := b.plane.Register(ctx, "beta", "admin", ts.Contract(name, callPath))
		if !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), "reserved for a platform tool") {
			t.Errorf("beta registers %s: %v; want already exists, reserved", name, err)
		}
	}
	if _, _, err := b.plane.Register(ctx, "", "admin", ts.Contract("billing", callPath)); err != nil {
		t.Errorf("the platform registers its reserved billing: %v", err)
	}
}

func contractJSON(t *testing.T, ts *stewardtest.Tool, name string) string {
	t.Helper()
	data, err := protojson.Marshal(ts.Contract(name, callPath))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
