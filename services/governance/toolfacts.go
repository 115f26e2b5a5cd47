package governance

import (
	"sync"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance/policy"
)

// toolFacts is what policy sees of a tool contract, made ready once.
type toolFacts struct {
	facts map[string]any // read-only: shared by every evaluation of the tool
	ready
}

// ready is a member of the policy input made ready once, for every
// evaluation that takes it: converted for OPA, and its canonical form for
// the input hash.
type ready struct {
	value     policy.Part
	canonical []byte
}

// readyOf makes facts ready.
func readyOf(facts map[string]any) (ready, error) {
	canonical, err := action.CanonicalJSON(facts)
	if err != nil {
		return ready{}, err
	}
	value, err := policy.NewPart(facts)
	if err != nil {
		return ready{}, err
	}
	return ready{value: value, canonical: canonical}, nil
}

// newToolFacts is what policy sees of contract, a tool of tenant's. A
// tenant's tool says whose it is (tool.tenant), so that policy can tell it
// from a global tool, whose facts stay as they were before tenants.
func newToolFacts(tenant string, c *stewardv1.ToolContract) (toolFacts, error) {
	facts, err := protoFacts(c.ProtoReflect())
	if err != nil {
		return toolFacts{}, err
	}
	if tenant != "" {
		facts["tenant"] = tenant
	}
	r, err := readyOf(facts)
	if err != nil {
		return toolFacts{}, err
	}
	return toolFacts{facts: facts, ready: r}, nil
}

// toolFactsCache keeps toolFacts per tool version: a registered version
// never changes (toolreg), so its facts are built once. It grows with the
// registry, which keeps every version too. A version is its tenant's
// ("" for a global tool): two tenants' tools of one name and version are
// two contracts, and one's facts must never stand for the other's. Safe
// for concurrent use.
type toolFactsCache struct {
	byVersion sync.Map // tenant + "\x00" + name + "\x00" + version → toolFacts
}

func (c *toolFactsCache) of(tenant string, contract *stewardv1.ToolContract) (toolFacts, error) {
	key := tenant + "\x00" + contract.GetName() + "\x00" + contract.GetVersion()
	if f, ok := c.byVersion.Load(key); ok {
		return f.(toolFacts), nil
	}
	f, err := newToolFacts(tenant, contract)
	if err != nil {
		return toolFacts{}, err
	}
	actual, _ := c.byVersion.LoadOrStore(key, f)
	return actual.(toolFacts), nil
}
