package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// The tool registry, for whoever reads it and for a tool-admin who adds
// to it.

func (c *cli) toolsCommand() *cobra.Command {
	return c.group("tools", "see the tools tasks may call, and register new ones", c.toolsLs(), c.toolsShow(), c.toolsRegister(), c.toolsImportMCP())
}

func (c *cli) toolsLs() *cobra.Command {
	return c.verb("ls", "list the latest version of every tool you see, by name", nil, func(ctx context.Context, s *steward.Client, _ []string) error {
		tools, err := s.ListTools(ctx)
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		if c.json() {
			return messages(c, tools)
		}
		rows := make([][]string, 0, len(tools))
		for _, t := range tools {
			k := t.Contract
			rows = append(rows, []string{k.GetName(), k.GetVersion(), word(k.GetEffectClass(), "EFFECT_CLASS_"), word(k.GetDataSensitivity(), "DATA_SENSITIVITY_"),
				endpoint(k), owner(t), short(k.GetDescription(), 50)})
		}
		return c.table([]string{"TOOL", "VERSION", "EFFECT", "SENSITIVITY", "ENDPOINT", "TENANT", "DESCRIPTION"}, rows)
	})
}

func (c *cli) toolsShow() *cobra.Command {
	var version string
	cmd := c.verb("show TOOL", "show a tool's contract: what it does to the world, and how Steward calls it", []string{"TOOL"}, func(ctx context.Context, s *steward.Client, args []string) error {
		t, err := s.GetTool(ctx, args[0], version)
		if err != nil {
			return fmt.Errorf("tool %s: %w", args[0], err)
		}
		if c.json() {
			return c.message(t)
		}
		k := t.Contract
		fields(c.stdout,
			"tool", k.GetName(), "version", k.GetVersion(), "description", k.GetDescription(),
			"effect", word(k.GetEffectClass(), "EFFECT_CLASS_"), "sensitivity", word(k.GetDataSensitivity(), "DATA_SENSITIVITY_"),
			"approval", word(k.GetDefaultApproval(), "APPROVAL_RULE_"), "endpoint", endpoint(k),
			"idempotent", idempotency(k), "status query", yes(k.GetStatusQuery()), "undone by", k.GetCompensatingTool(),
			"scopes", strings.Join(k.GetRequiredScopes(), ", "), "timeout", duration(k.GetTimeout()),
			"mcp digest", k.GetMcp().GetSchemaDigest(), "mcp hints", mcpHints(k.GetMcp().GetHints()),
			"parameters", k.GetParametersSchema(), "result", k.GetResultSchema(),
			"tenant", owner(t), "registered", when(t.RegisteredAt)+" by "+t.RegisteredBy)
		return nil
	})
	cmd.Flags().StringVar(&version, "version", "", "this `VERSION` (default: the latest)")
	return cmd
}

func (c *cli) toolsRegister() *cobra.Command {
	return c.verb("register FILE", "register the tool contracts in FILE (tool-admins): one contract, or a --tools file's {\"tools\": […]}", []string{"FILE"}, func(ctx context.Context, s *steward.Client, args []string) error {
		data, err := os.ReadFile(args[0])
		if err != nil {
			return err
		}
		contracts, err := toolContracts(data)
		if err != nil {
			return usagef("%s is not a tool contract: %v", args[0], err)
		}
		for _, k := range contracts {
			t, created, err := s.RegisterTool(ctx, k)
			if err != nil {
				return fmt.Errorf("register %s@%s: %w", k.GetName(), k.GetVersion(), err)
			}
			if c.json() {
				err = c.message(t)
			} else if created {
				_, err = fmt.Fprintf(c.stdout, "tool %s@%s is registered (%s)\n", t.Contract.GetName(), t.Contract.GetVersion(), owner(t))
			} else {
				_, err = fmt.Fprintf(c.stdout, "tool %s@%s was registered already, with this contract\n", t.Contract.GetName(), t.Contract.GetVersion())
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// toolContracts decodes one ToolContract in protobuf JSON, or a --tools
// file's {"tools": [ToolContract, …]}; unknown fields are refused, so
// that a typo is an error rather than a different tool.
func toolContracts(data []byte) ([]*stewardv1.ToolContract, error) {
	var file struct {
		Tools []json.RawMessage `json:"tools"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	raws := []json.RawMessage{data}
	if err := dec.Decode(&file); err == nil && file.Tools != nil {
		raws = file.Tools
	}
	out := make([]*stewardv1.ToolContract, 0, len(raws))
	for i, raw := range raws {
		k := &stewardv1.ToolContract{}
		if err := protojson.Unmarshal(raw, k); err != nil {
			if file.Tools != nil {
				return nil, fmt.Errorf("tools[%d]: %w", i, err)
			}
			return nil, err
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("it lists no tools")
	}
	return out, nil
}

// endpoint is how Steward calls a tool.
func endpoint(k *stewardv1.ToolContract) string {
	switch {
	case k.GetHttp() != nil:
		return k.GetHttp().GetUrl()
	case k.GetBuiltin() != nil:
		return "builtin " + k.GetBuiltin().GetKind()
	case k.GetModel() != nil:
		return "model " + k.GetModel().GetProvider() + "/" + k.GetModel().GetModel()
	case k.GetMcp() != nil:
		return "mcp " + k.GetMcp().GetUrl() + " " + k.GetMcp().GetTool()
	}
	return ""
}

// owner is the tenant a tool belongs to, or "global".
func owner(t *stewardv1.Tool) string {
	if t.Tenant == "" {
		return "global"
	}
	return t.Tenant
}

// idempotency says whether a tool honours the op_key, and for how long.
func idempotency(k *stewardv1.ToolContract) string {
	i := k.GetIdempotency()
	switch {
	case !i.GetHonoursKey():
		return "no"
	case i.GetRetention() == nil:
		return "yes, for good"
	}
	return "yes, for " + i.GetRetention().AsDuration().String()
}

// duration is d as a person reads it; "" for none.
func duration(d *durationpb.Duration) string {
	if d == nil {
		return ""
	}
	return d.AsDuration().String()
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
