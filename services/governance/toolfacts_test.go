package governance

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestToolFactsAreATenantsOwn: two tenants' tools of one name and version
// are two contracts; the facts policy reads of one never stand for the
// other's — or a tenant's read-only deploy@1 would let another tenant's
// irreversible deploy@1 pass as a read.
func TestToolFactsAreATenantsOwn(t *testing.T) {
	var cache toolFactsCache
	contract := func(effect stewardv1.EffectClass) *stewardv1.ToolContract {
		return &stewardv1.ToolContract{Name: "deploy", Version: "1", EffectClass: effect}
	}
	if _, err := cache.of("acme", contract(stewardv1.EffectClass_EFFECT_CLASS_READ)); err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"globex", ""} {
		facts, err := cache.of(tenant, contract(stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE))
		if err != nil {
			t.Fatal(err)
		}
		if got := facts.facts["effect_class"]; got != "EFFECT_CLASS_IRREVERSIBLE" {
			t.Errorf("tenant %q's deploy@1 reads to policy as %v, want its own EFFECT_CLASS_IRREVERSIBLE", tenant, got)
		}
	}
}
