package e2e_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// toolChecks are the rows of tenants' tools: where they may call, and
// which names they may take (docs/tenants.md#tools).
func toolChecks() map[string]tableCheck {
	ctx := context.Background()
	// register registers tool name over http at url (and statusURL) with
	// token. 192.0.2.1 is a documentation address: outside, and never
	// dialed by a registration.
	register := func(e *harness, token, name, url, statusURL string) error {
		c := &stewardv1.ToolContract{
			Name: name, Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
			DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC, StatusQuery: statusURL != "",
			Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: url, StatusUrl: statusURL}}}
		_, err := toolClient(e.url, token).RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: c}))
		return err
	}
	return map[string]tableCheck{
		"`RegisterTool` by a tenant of a tool whose `url` or `statusUrl` reaches inside — loopback, link-local, a private range, this machine, or a name resolving to one — outside `--tool-egress-allow`": func(t *testing.T, e *harness) []error {
			inside := func(url, statusURL, field, why string) error {
				return saying(t, onField(t, register(e, acmeToolAdminToken, "table-inside", url, statusURL), field), why, "may not reach")
			}
			return []error{alike(t,
				inside("http://127.0.0.1:1/x", "", "contract.http.url", "loopback"),
				inside("http://169.254.169.254/latest/meta-data/", "", "contract.http.url", "link-local"),
				inside("http://10.0.0.1/x", "", "contract.http.url", "private"),
				inside("http://localhost:1/x", "", "contract.http.url", "localhost resolves to"),
				inside("http://192.0.2.1/x", "http://192.168.0.1/status", "contract.http.status_url", "private"),
			)}
		},
		"`RegisterTool` of a name that differs only in case from a tool the caller's tenant sees, or by a tenant of a name the platform reserved (`--reserved-tool-names`, the `--tools` file)": func(t *testing.T, e *harness) []error {
			if err := register(e, toolAdminToken, "table-case", "http://192.0.2.1/x", ""); err != nil {
				t.Fatal(err)
			}
			return []error{alike(t,
				saying(t, register(e, acmeToolAdminToken, "Table-Case", "http://192.0.2.1/x", ""), `differs only in case from tool "table-case"`),
				saying(t, register(e, toolAdminToken, "TABLE-CASE", "http://192.0.2.1/x", ""), `differs only in case from tool "table-case"`),
				saying(t, register(e, acmeToolAdminToken, "Table-Reserved", "http://192.0.2.1/x", ""), "reserved for a platform tool"),
			)}
		},
	}
}
