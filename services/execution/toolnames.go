package execution

import (
	"context"
	"strings"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// admit checks what a registration of c by tenant may not do beyond its
// contract and its name: a tenant's tool may not be built in, read a key
// file on this host (a model's key, an MCP tool's credential), or call inside (Config.Egress).
func (rg *registration) admit(ctx context.Context, tenant string, c *stewardv1.ToolContract) error {
	if tenant == "" {
		return nil
	}
	if c.GetBuiltin() != nil {
		return errs.Field("contract.builtin", "is the default tenant's to register: a built-in tool acts on what this Steward keeps for every tenant; a tenant's tool calls its service over http")
	}
	for _, f := range []struct{ field, file string }{{"contract.mcp.token_file", c.GetMcp().GetTokenFile()}, {"contract.mcp.oauth_file", c.GetMcp().GetOauthFile()}} {
		if f.file != "" {
			return errs.Field(f.field, "is the default tenant's to set: the file is read on this Steward's host, and its credential sent to the tool's url")
		}
	}
	if c.GetModel().GetKeyFile() != "" {
		return errs.Field("contract.model.key_file", "is the default tenant's to set: the file is read on this Steward's host, and its content sent to the tool's base_url")
	}
	for _, u := range []struct{ field, url string }{{"contract.http.url", c.GetHttp().GetUrl()}, {"contract.http.status_url", c.GetHttp().GetStatusUrl()},
		{"contract.model.base_url", c.GetModel().GetBaseUrl()}, {"contract.mcp.url", c.GetMcp().GetUrl()}} {
		if u.url == "" {
			continue
		}
		if err := rg.cfg.Egress.CheckURL(ctx, u.url); err != nil {
			return errs.Field(u.field, "%s", err.Error())
		}
	}
	return nil
}

// reservedFor refuses tenant a name, without case, that is the
// platform's: in Config.ReservedTools or in the --tools file.
func (rg *registration) reservedFor(tenant, name string) error {
	rg.reservedMu.RLock()
	defer rg.reservedMu.RUnlock()
	if _, ok := rg.reserved[strings.ToLower(name)]; ok && tenant != "" {
		return errs.New(errs.AlreadyExists, "tool %s is reserved for a platform tool: a tenant's tool may not take its name; choose another", errs.Quote(name))
	}
	return nil
}

// reserve adds names to those no tenant may take.
func (rg *registration) reserve(names ...string) {
	rg.reservedMu.Lock()
	defer rg.reservedMu.Unlock()
	if rg.reserved == nil {
		rg.reserved = map[string]struct{}{}
	}
	for _, n := range names {
		rg.reserved[strings.ToLower(n)] = struct{}{}
	}
}

// caseVariant refuses name to tenant mine when a tool it would be seen
// beside has the same name but for case (Lookup beside lookup, which an
// approver can take for each other): its own, a global one, or — for a
// global name — a tenant's. It names the tool held, never the tenant.
//
// It reads the registry, not one chain: two variants registered at the
// very same moment may both pass. A clash found at start is reported
// (RegisterFile).
func (rg *registration) caseVariant(ctx context.Context, mine, name string) error {
	if err := rg.cfg.Tools.Sync(ctx, rg.log); err != nil {
		return err
	}
	for _, t := range rg.cfg.Tools.Variants(name) {
		theirs := t.Tenant
		if theirs != mine && theirs != "" && mine != "" {
			continue // another tenant's, which mine never sees
		}
		held := errs.New(errs.AlreadyExists, "tool %s differs only in case from tool %s, registered already: names are compared without case; choose another", errs.Quote(name), errs.Quote(t.Contract.Name))
		if mine == "" && theirs != "" {
			return &tenantClash{err: held, tenant: theirs, held: t.Contract.Name}
		}
		return held
	}
	return nil
}

// tenantClash refuses a global tool a name a tenant's tool holds. It
// carries the tenant for the platform's log (RegisterFile), never for
// the caller.
type tenantClash struct {
	err    *errs.Error
	tenant string
	held   string
}

func (c *tenantClash) Error() string { return c.err.Error() }
func (c *tenantClash) Unwrap() error { return c.err }
