package eventlog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestTenantTokenIsOneSubjectTokenPerTenant: every tenant name — with
// dots, wildcards, spaces, '=', non-ASCII, or spelled like a tool —
// becomes one subject token that starts with '=', as no tool name,
// service key or event type does, and reads back as the same tenant.
func TestTenantTokenIsOneSubjectTokenPerTenant(t *testing.T) {
	tenants := []string{"acme", "a.b", "a*", "a>", "a b", "=", "=3D", "=41", "A", "ü", "search", "tool", "-_", strings.Repeat("é", 64)}
	seen := map[string]string{}
	for _, tenant := range tenants {
		tok := eventlog.TenantToken(tenant)
		if !strings.HasPrefix(tok, "=") || strings.ContainsAny(tok, ".*> \t") {
			t.Errorf("TenantToken(%q) = %q: not one subject token that starts with '='", tenant, tok)
		}
		for _, c := range tok {
			if c > 0x7f {
				t.Errorf("TenantToken(%q) = %q holds non-ASCII", tenant, tok)
			}
		}
		if other, dup := seen[tok]; dup {
			t.Errorf("tenants %q and %q share the token %q", tenant, other, tok)
		}
		seen[tok] = tenant
		if back, ok := eventlog.TenantOfToken(tok); !ok || back != tenant {
			t.Errorf("TenantOfToken(%q) = %q, %v; want %q", tok, back, ok, tenant)
		}
	}
	if eventlog.TenantToken("") != "" {
		t.Error("the default tenant has a token: its subjects would not be those written before tenants")
	}
	for _, bad := range []string{"", "search", "=", "==zz", "==3d", "==41", "==4", "=a.b"} {
		if got, ok := eventlog.TenantOfToken(bad); ok {
			t.Errorf("TenantOfToken(%q) = %q, true; want a refusal (TenantToken never writes it)", bad, got)
		}
	}
}

// TestTenantSubjects: a tenant's tool registration is in the chain of its
// name, beside the global one's, whose subject is as before tenants; a
// tenant's breaker change is in a chain of its own, never the global
// service's — not even for a tenant named like the service.
func TestTenantSubjects(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	register := func(tenant string, head eventlog.Head) eventlog.Head {
		t.Helper()
		c := &stewardv1.ToolContract{Name: "bank", Version: "1"}
		rec, err := l.Append(ctx, head, mustEvent(t, event.Meta{ID: event.ID("tool", "bank", "1", tenant)}, &stewardv1.ToolRegistered{Contract: c, Tenant: tenant}))
		if err != nil {
			t.Fatalf("register for %q: %v", tenant, err)
		}
		return eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
	}
	head := register("", eventlog.Head{})
	register("bank", head)
	recs, err := l.ReadTool(ctx, "bank")
	if err != nil || len(recs) != 2 || recs[1].Event.GetToolRegistered().Tenant != "bank" {
		t.Fatalf("the name's chain: %v, %v; want the global registration and the tenant's", recs, err)
	}
	stream, err := bus.JS.Stream(ctx, eventlog.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter("steward.tool.>"))
	if err != nil {
		t.Fatal(err)
	}
	subjects := info.State.Subjects
	for _, want := range []string{"steward.tool.bank.tool.registered", "steward.tool.bank.=bank.tool.registered"} {
		if subjects[want] != 1 {
			t.Errorf("no registration on %s; stored on %v", want, subjects)
		}
	}

	changed := func(tenant, id string) {
		t.Helper()
		head, _, err := l.ServiceHead(ctx, tenant, "bank")
		if err != nil {
			t.Fatal(err)
		}
		ev := mustEvent(t, event.Meta{ID: event.ID("breaker", tenant, id)}, &stewardv1.BreakerChanged{ServiceKey: "bank", Tenant: tenant, To: stewardv1.BreakerState_BREAKER_STATE_OPEN})
		if _, err := l.Append(ctx, head, ev); err != nil {
			t.Fatalf("breaker of %q: %v", tenant, err)
		}
	}
	changed("bank", "1")
	changed("", "1")
	changed("bank", "2")
	for tenant, want := range map[string]int{"": 1, "bank": 2, "acme": 0} {
		recs, err := l.ReadService(ctx, tenant, "bank")
		if err != nil || len(recs) != want {
			t.Errorf("service bank of %q: %d events, %v; want %d", tenant, len(recs), err, want)
		}
		for _, r := range recs {
			if got := r.Event.GetBreakerChanged().Tenant; got != tenant {
				t.Errorf("service bank of %q holds a change of %q", tenant, got)
			}
		}
	}
}
