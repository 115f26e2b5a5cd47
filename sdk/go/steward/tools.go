package steward

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The tool registry, for a tool-admin and for anyone reading it. A
// registration carries no id of its own and needs none: a version is
// registered once and never changes, so the same contract sent again is
// answered with the tool as registered (created false), and a retry after
// a lost answer is safe.

// RegisterTool registers one version of a tool under the caller's tenant
// (the default tenant's tools are global). It reports whether it was
// created now — false also when a retry after a lost answer finds the
// version the lost attempt registered.
func (c *Client) RegisterTool(ctx context.Context, contract *stewardv1.ToolContract) (*stewardv1.Tool, bool, error) {
	resp, err := call(ctx, c.retry, c.tools.RegisterTool, &stewardv1.RegisterToolRequest{Contract: contract})
	return resp.GetTool(), resp.GetCreated(), err
}

// GetTool reads one version of a tool the caller's tenant sees; its
// latest when version is empty.
func (c *Client) GetTool(ctx context.Context, name, version string) (*stewardv1.Tool, error) {
	resp, err := call(ctx, c.retry, c.tools.GetTool, &stewardv1.GetToolRequest{Name: name, Version: version})
	return resp.GetTool(), err
}

// ListTools lists the latest version of every tool the caller's tenant
// sees (its own and the global ones), by name.
func (c *Client) ListTools(ctx context.Context) ([]*stewardv1.Tool, error) {
	resp, err := call(ctx, c.retry, c.tools.ListTools, &stewardv1.ListToolsRequest{})
	return resp.GetTools(), err
}

// WhoAmI says who the caller is to Steward: its principal, roles and
// tenant ("" for the default tenant).
func (c *Client) WhoAmI(ctx context.Context) (*stewardv1.WhoAmIResponse, error) {
	return call(ctx, c.retry, c.query.WhoAmI, &stewardv1.WhoAmIRequest{})
}
