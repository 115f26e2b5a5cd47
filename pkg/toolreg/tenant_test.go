package toolreg_test

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolreg"
)

// TestATenantSeesItsOwnToolsAndTheGlobalOnes: a tenant's tool is found by
// that tenant's reads only; every tenant finds the global ones; two
// tenants' tools of one name are two tools; and another tenant's tool is
// not found in the very words of a tool that does not exist.
func TestATenantSeesItsOwnToolsAndTheGlobalOnes(t *testing.T) {
	r := toolreg.New(slog.New(slog.DiscardHandler))
	apply := func(seq uint64, tenant, name, version string) {
		t.Helper()
		c := valid()
		c.Name, c.Version = name, version
		reg := &stewardv1.ToolRegistered{Contract: c, Tenant: tenant}
		if err := r.Apply(&stewardv1.EventRecord{Sequence: seq, Event: &stewardv1.Event{Payload: &stewardv1.Event_ToolRegistered{ToolRegistered: reg}}}); err != nil {
			t.Fatal(err)
		}
	}
	apply(1, "", "search", "1.0.0")
	apply(2, "acme", "deploy", "1.0.0")
	apply(3, "beta", "deploy", "2.0.0")
	apply(4, "acme", "deploy", "1.1.0")

	for _, tc := range []struct{ tenant, name, wantTenant, wantVersion string }{
		{"acme", "deploy", "acme", "1.1.0"},
		{"beta", "deploy", "beta", "2.0.0"},
		{"acme", "search", "", "1.0.0"},
		{"beta", "search", "", "1.0.0"},
		{"", "search", "", "1.0.0"},
	} {
		e, err := r.Get(tc.tenant, tc.name, "")
		if err != nil || e.Tool.Tenant != tc.wantTenant || e.Tool.Contract.Version != tc.wantVersion {
			t.Errorf("Get(%q, %q): %v, %v; want %s of tenant %q", tc.tenant, tc.name, e, err, tc.wantVersion, tc.wantTenant)
		}
	}
	if e, err := r.AsOf("acme", "deploy", 4); err != nil || e.Tool.Contract.Version != "1.0.0" {
		t.Errorf("acme's deploy as of 4: %v, %v; want 1.0.0", e, err)
	}

	_, missing := r.Get("acme", "nothing", "")
	for _, tc := range []struct{ tenant, version string }{{"", ""}, {"other", ""}, {"beta", "1.0.0"}} {
		_, err := r.Get(tc.tenant, "deploy", tc.version)
		if !errs.Is(err, errs.NotFound) {
			t.Errorf("Get(%q, deploy, %q) = %v; want not found: it is another tenant's", tc.tenant, tc.version, err)
		}
		if _, err := r.AsOf(tc.tenant, "deploy", 9); !errs.Is(err, errs.NotFound) && tc.version == "" {
			t.Errorf("AsOf(%q, deploy) = %v; want not found", tc.tenant, err)
		}
	}
	if _, err := r.Get("other", "deploy", ""); err == nil || missing == nil || err.Error() != "tool \"deploy\" is not registered" || missing.Error() != "tool \"nothing\" is not registered" {
		t.Errorf("another tenant's tool: %q; a missing one: %q; want the same words", err, missing)
	}

	names := func(tenant string) (out []string) {
		for _, tool := range r.List(tenant) {
			out = append(out, tool.Tenant+"/"+tool.Contract.Name+"@"+tool.Contract.Version)
		}
		return out
	}
	for tenant, want := range map[string][]string{
		"":      {"/search@1.0.0"},
		"acme":  {"acme/deploy@1.1.0", "/search@1.0.0"},
		"beta":  {"beta/deploy@2.0.0", "/search@1.0.0"},
		"other": {"/search@1.0.0"},
	} {
		if got := names(tenant); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %v, want %v", tenant, got, want)
		}
	}
}
