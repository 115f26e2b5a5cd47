package e2e_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// pinChecks are the rows of docs/errors.md about pinned tools and who
// registers them (docs/contract.md, "Pinned tools").
func pinChecks() map[string]tableCheck {
	ctx := context.Background()
	// probe registers version of tool name with token, a built-in tool,
	// or one over http (a tenant's may only be), at a documentation
	// address the egress rule lets a tenant's tool name.
	probe := func(e *harness, token, name, version string, http bool) error {
		c := &stewardv1.ToolContract{
			Name: name, Version: version, EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
			DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC,
			Endpoint:        &stewardv1.ToolContract_Builtin{Builtin: &stewardv1.BuiltinEndpoint{Kind: "noop"}}}
		if http {
			c.Endpoint = &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: "http://192.0.2.1/x"}}
		}
		_, err := toolClient(e.url, token).RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: c}))
		return err
	}
	// pinprobe registers version of a tool of its own, so that no other
	// row's tasks see it, as a tool-admin or with token.
	pinprobe := func(e *harness, token, version string) error {
		return probe(e, token, "table-pinprobe", version, false)
	}
	return map[string]tableCheck{
		"a contract's `allowedTools` entry that is neither `name` nor `name@version`, or a tool named twice, on `CreateTask` or `DelegateTask`": func(t *testing.T, e *harness) []error {
			create := func(tools ...string) error {
				k := contract()
				k.AllowedTools = tools
				_, err := e.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{Contract: k}))
				return err
			}
			return []error{alike(t,
				onField(t, create("search", "wire@"), "contract.allowed_tools[1]"),
				onField(t, create("@1.0.0"), "contract.allowed_tools[0]"),
				onField(t, create("search@1.0.0", "search"), "contract.allowed_tools[1]"),
			)}
		},
		"a proposal naming a `toolVersion` other than the contract's pin, or one registered after the task was created": func(t *testing.T, e *harness) []error {
			if err := pinprobe(e, toolAdminToken, "1.0.0"); err != nil {
				t.Fatal(err)
			}
			k := contract()
			k.AllowedTools = []string{"table-pinprobe"}
			unpinned := e.create(t, "table-pin-unpinned", k)
			k.AllowedTools = []string{"table-pinprobe@1.0.0"}
			pinned := e.create(t, "table-pin-pinned", k)
			if err := pinprobe(e, toolAdminToken, "2.0.0"); err != nil {
				t.Fatal(err)
			}
			newer := e.unchanged(t, unpinned, func() error { return e.propose(t, unpinned, "", "table-pinprobe", "2.0.0", nil, nil) })
			other := e.unchanged(t, pinned, func() error { return e.propose(t, pinned, "", "table-pinprobe", "2.0.0", nil, nil) })
			return []error{alike(t,
				saying(t, onField(t, newer[0], "tool_version"), "registered after task"),
				saying(t, onField(t, other[0], "tool_version"), "pins"),
			)}
		},
		"`RegisterTool` without the `tool-admin` role": func(t *testing.T, e *harness) []error {
			return []error{alike(t, pinprobe(e, agentToken, "3.0.0"), pinprobe(e, operatorToken, "3.0.0"))}
		},
		"`RegisterTool` by a tenant of a global tool's name, or by the default tenant of a tenant's tool's name": func(t *testing.T, e *harness) []error {
			if err := probe(e, toolAdminToken, "table-global", "1", true); err != nil {
				t.Fatal(err)
			}
			if err := probe(e, acmeToolAdminToken, "table-tenants", "1", true); err != nil {
				t.Fatal(err)
			}
			byTenant, byDefault := probe(e, acmeToolAdminToken, "table-global", "2", true), probe(e, toolAdminToken, "table-tenants", "2", true)
			if byDefault != nil && strings.Contains(byDefault.Error(), "acme") {
				t.Errorf("%v: names the tenant", byDefault)
			}
			return []error{alike(t, saying(t, byTenant, "a global tool"), saying(t, byDefault, "a tenant's tool"))}
		},
		"`RegisterTool` of a built-in tool by a tenant": func(t *testing.T, e *harness) []error {
			return []error{onField(t, probe(e, acmeToolAdminToken, "table-builtin", "1", false), "contract.builtin")}
		},
	}
}
