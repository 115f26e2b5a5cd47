package execution

import (
	"bytes"
	"context"
	"encoding/json"
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

// Register records a tool version. A version is registered once: the same
// contract again returns the tool with created false, a different contract
// under a registered version is AlreadyExists.
func (p *Plane) Register(ctx context.Context, principal string, c *stewardv1.ToolContract) (*stewardv1.Tool, bool, error) {
	if err := toolreg.Validate(c); err != nil {
		return nil, false, err
	}
	for range 8 {
		recs, err := p.log.ReadTool(ctx, c.Name)
		if err != nil {
			return nil, false, err
		}
		for _, r := range recs {
			if old := r.Event.GetToolRegistered().GetContract(); old.GetVersion() == c.Version {
				if !proto.Equal(old, c) {
					return nil, false, errs.New(errs.AlreadyExists, "tool %s is registered with a different contract; register a new version", toolreg.Key(c.Name, c.Version))
				}
				return p.tool(ctx, c.Name, c.Version, false)
			}
		}
		head := eventlog.Head{}
		if n := len(recs); n > 0 {
			head = eventlog.Head{Sequence: recs[n-1].Sequence, Hash: recs[n-1].Event.Hash}
		}
		ev, err := event.New(event.Meta{
			ID:    event.ID("tool", c.Name, c.Version),
			Actor: &stewardv1.Actor{Principal: principal, Plane: PlaneName},
		}, &stewardv1.ToolRegistered{Contract: c})
		if err != nil {
			return nil, false, err
		}
		if _, err := p.log.Append(ctx, head, ev); errs.Is(err, errs.Conflict) {
			continue
		} else if err != nil {
			return nil, false, err
		}
		return p.tool(ctx, c.Name, c.Version, true)
	}
	return nil, false, errs.New(errs.Conflict, "tool %s is changing too fast; try again", c.Name)
}

func (p *Plane) tool(ctx context.Context, name, version string, created bool) (*stewardv1.Tool, bool, error) {
	if err := p.cfg.Tools.Sync(ctx, p.log); err != nil {
		return nil, false, err
	}
	e, err := p.cfg.Tools.Get(name, version)
	if err != nil {
		return nil, false, err
	}
	return e.Tool, created, nil
}

// RegisterFile registers every tool in a --tools file,
// {"tools": [ToolContract, …]} with each contract in protobuf JSON. Each
// registration is idempotent, so a restart with the same file changes
// nothing.
func (p *Plane) RegisterFile(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tools, err := parseToolFile(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for i, c := range tools {
		if _, _, err := p.Register(ctx, "steward", c); err != nil {
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
	// says so, and the RPC edge enforces it. Tools are every tenant's, so
	// only the default tenant's may register one: another tenant's new
	// version of a tool would have every tenant's calls to it, secrets
	// included, sent where it says (docs/tenants.md).
	if who := rpc.Caller(ctx); who.Tenant != "" {
		return nil, errs.New(errs.PermissionDenied, "%s of tenant %s may not register tools: tools are every tenant's, and only a tool-admin of the default tenant registers them", who.Principal, errs.Quote(who.Tenant))
	}
	t, created, err := s.plane.Register(ctx, rpc.Principal(ctx), req.Msg.Contract)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RegisterToolResponse{Tool: t, Created: created}), nil
}

func (s *toolService) GetTool(ctx context.Context, req *connect.Request[stewardv1.GetToolRequest]) (*connect.Response[stewardv1.GetToolResponse], error) {
	if req.Msg.Name == "" {
		return nil, errs.Field("name", "is required")
	}
	t, _, err := s.plane.tool(ctx, req.Msg.Name, req.Msg.Version, false)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.GetToolResponse{Tool: t}), nil
}

func (s *toolService) ListTools(ctx context.Context, _ *connect.Request[stewardv1.ListToolsRequest]) (*connect.Response[stewardv1.ListToolsResponse], error) {
	if err := s.plane.cfg.Tools.Sync(ctx, s.plane.log); err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ListToolsResponse{Tools: s.plane.cfg.Tools.List()}), nil
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
