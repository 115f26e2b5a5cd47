package execution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/toolreg"
)

// Register records a tool version of tenant, "" for a global tool (the
// default tenant's). A version is registered once: the same contract again
// returns the tool with created false, a different contract under a
// registered version is AlreadyExists.
//
// A name is one tool for a task: a tenant may not take a global tool's
// name, nor the default tenant a name a tenant's tool has (AlreadyExists,
// naming no tenant), so that no tenant can stand its own tool in for a
// global one its tasks would otherwise call; two tenants may each have a
// tool of one name. Every registration of a name, whoever's, is on one
// chain, and the append is conditional on its head: two registrations
// cannot both pass the check.
//
// Names are compared without case, too (caseVariant), and a name the
// platform reserved is no tenant's (Config.ReservedTools, the --tools
// file).
//
// A tenant's tool calls a service over http: the built-in tools act on
// what this Steward keeps for every tenant alike (the file.write sandbox,
// the kv.append bucket), so only the default tenant registers them; and
// its URLs must pass the egress rule (Config.Egress), after resolving.
func (rg *registration) Register(ctx context.Context, tenant, principal string, c *stewardv1.ToolContract) (*stewardv1.Tool, bool, error) {
	if err := rg.cfg.Tools.Validate(c); err != nil {
		return nil, false, err
	}
	if err := rg.caseVariant(ctx, tenant, c.Name); err != nil {
		return nil, false, err
	}
	if err := rg.admit(ctx, tenant, c); err != nil {
		return nil, false, err
	}
	if tenant != "" && c.GetLimits().GetPerTenant() {
		return nil, false, errs.Field("contract.limits.per_tenant", "splits a global tool's limits between tenants; a tenant's tool is its tenant's alone")
	}
	for range 8 {
		recs, err := rg.log.ReadTool(ctx, c.Name)
		if err != nil {
			return nil, false, err
		}
		for _, r := range recs {
			reg := r.Event.GetToolRegistered()
			if err := nameTaken(tenant, reg.GetTenant(), c.Name); err != nil {
				return nil, false, err
			}
			if reg.GetTenant() != tenant {
				continue // another tenant's tool of the same name
			}
			if old := reg.GetContract(); old.GetVersion() == c.Version {
				if !proto.Equal(old, c) {
					return nil, false, errs.New(errs.AlreadyExists, "tool %s is registered with a different contract; register a new version", toolreg.Key(c.Name, c.Version))
				}
				return rg.tool(ctx, tenant, c.Name, c.Version, false)
			}
		}
		// A global tool's name is refused above, in its own words.
		if err := rg.reservedFor(tenant, c.Name); err != nil {
			return nil, false, err
		}
		head := eventlog.Head{}
		if n := len(recs); n > 0 {
			head = eventlog.Head{Sequence: recs[n-1].Sequence, Hash: recs[n-1].Event.Hash}
		}
		ev, err := event.New(event.Meta{
			ID:    registrationID(tenant, c.Name, c.Version),
			Actor: &stewardv1.Actor{Principal: principal, Plane: PlaneName},
		}, &stewardv1.ToolRegistered{Contract: c, Tenant: tenant})
		if err != nil {
			return nil, false, err
		}
		if _, err := rg.log.Append(ctx, head, ev); errs.Is(err, errs.Conflict) {
			continue
		} else if err != nil {
			return nil, false, err
		}
		return rg.tool(ctx, tenant, c.Name, c.Version, true)
	}
	return nil, false, errs.New(errs.Conflict, "tool %s is changing too fast; try again", c.Name)
}

// nameTaken refuses a registration of tool name by tenant mine where
// tenant theirs has one: a global tool's name to a tenant, a tenant's to
// the default tenant. It names neither tenant.
func nameTaken(mine, theirs, name string) error {
	switch {
	case mine != "" && theirs == "":
		return errs.New(errs.AlreadyExists, "tool %s is a global tool: a tenant's tool may not take its name; choose another", errs.Quote(name))
	case mine == "" && theirs != "":
		return &tenantClash{err: errs.New(errs.AlreadyExists, "tool %s is a tenant's tool: a global tool may not take its name; choose another", errs.Quote(name)), tenant: theirs, held: name}
	}
	return nil
}

// registrationID is a registration's event id: a global tool's as it was
// before tenants, so that a retried registration across the upgrade is
// the same event; a tenant's names the tenant too, or two tenants
// registering one name and version would read as one append.
func registrationID(tenant, name, version string) string {
	if tenant == "" {
		return event.ID("tool", name, version)
	}
	return event.ID("tool", name, version, tenant)
}

func (rg *registration) tool(ctx context.Context, tenant, name, version string, created bool) (*stewardv1.Tool, bool, error) {
	if err := rg.cfg.Tools.Sync(ctx, rg.log); err != nil {
		return nil, false, err
	}
	e, err := rg.cfg.Tools.Get(tenant, name, version)
	if err != nil {
		return nil, false, err
	}
	// The registry's tool is shared, read-only; this one goes out to a
	// caller (Plane.Register) to keep.
	return proto.CloneOf(e.Tool), created, nil
}

// RegisterFile registers every tool in a --tools file,
// {"tools": [ToolContract, …]} with each contract in protobuf JSON. Each
// registration is idempotent, so a restart with the same file changes
// nothing. Every name in the file is reserved: no tenant may register it
// from now on.
//
// A name a tenant's tool held first is not the platform's to take: that
// tool is left out, with a warning naming both, at every start, and the
// rest of the file is registered (docs/tenants.md#tools). Any other
// refusal stops the start.
func (rg *registration) RegisterFile(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tools, err := parseToolFile(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range tools {
		rg.reserve(c.GetName())
	}
	for i, c := range tools {
		_, _, err := rg.Register(ctx, "", "steward", c)
		if clash := (*tenantClash)(nil); errors.As(err, &clash) {
			rg.logger.Warn("a --tools tool is not registered: a tenant's tool holds its name; rename the platform's tool, or have the tenant move off the name (its registered versions stay callable; no tenant may register the name again)",
				"file", path, "tool", toolreg.Key(c.GetName(), c.GetVersion()), "tenant", clash.tenant, "tenant_tool", clash.held)
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: tools[%d] (%s): %w", path, i, c.GetName(), err)
		}
	}
	return nil
}

type toolService struct {
	stewardv1connect.UnimplementedToolServiceHandler
	plane *Plane
}

func (s *toolService) RegisterTool(ctx context.Context, req *connect.Request[stewardv1.RegisterToolRequest]) (*connect.Response[stewardv1.RegisterToolResponse], error) {
	// Registering takes the tool-admin role: the role table (pkg/access)
	// says so, and the RPC edge enforces it. The tool is the caller's
	// tenant's, from its verified identity.
	who := rpc.Caller(ctx)
	t, created, err := s.plane.registration.Register(ctx, who.Tenant, who.Principal, req.Msg.Contract)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RegisterToolResponse{Tool: t, Created: created}), nil
}

func (s *toolService) GetTool(ctx context.Context, req *connect.Request[stewardv1.GetToolRequest]) (*connect.Response[stewardv1.GetToolResponse], error) {
	if req.Msg.Name == "" {
		return nil, errs.Field("name", "is required")
	}
	t, _, err := s.plane.registration.tool(ctx, rpc.Caller(ctx).Tenant, req.Msg.Name, req.Msg.Version, false)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.GetToolResponse{Tool: t}), nil
}

func (s *toolService) ListTools(ctx context.Context, _ *connect.Request[stewardv1.ListToolsRequest]) (*connect.Response[stewardv1.ListToolsResponse], error) {
	if err := s.plane.cfg.Tools.Sync(ctx, s.plane.log); err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ListToolsResponse{Tools: s.plane.cfg.Tools.List(rpc.Caller(ctx).Tenant)}), nil
}

// parseToolFile decodes a --tools file, rejecting unknown fields so that a
// typo in a contract is an error rather than a silently different tool.
func parseToolFile(data []byte) ([]*stewardv1.ToolContract, error) {
	var wrapper struct {
		Tools []json.RawMessage `json:"tools"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wrapper); err != nil {
		return nil, err
	}
	out := make([]*stewardv1.ToolContract, 0, len(wrapper.Tools))
	for i, raw := range wrapper.Tools {
		c := &stewardv1.ToolContract{}
		if err := protojson.Unmarshal(raw, c); err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}
