package e2e_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// boundsChecks are the checks of the rows about work a request may ask
// for: schemas, parameters, criteria and nesting.
func boundsChecks() map[string]tableCheck {
	ctx := context.Background()
	criterion := func(e *harness, requestID, expr string) error {
		k := contract()
		k.AcceptanceOwnerRef = "user:rev"
		k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "ok", Expression: "true"}, {Id: "c", Expression: expr}}
		_, err := e.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
		return err
	}
	register := func(e *harness, name string, change func(*stewardv1.ToolContract)) error {
		c := &stewardv1.ToolContract{Name: name, Version: "1.0.0", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
			DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC,
			Endpoint:        &stewardv1.ToolContract_Builtin{Builtin: &stewardv1.BuiltinEndpoint{Kind: "noop"}}}
		change(c)
		_, err := e.tools().RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: c}))
		return err
	}
	params := func(c *stewardv1.ToolContract, schema string) { c.ParametersSchema = schema }
	return map[string]tableCheck{
		"an acceptance criterion over 1 KiB": func(t *testing.T, e *harness) []error {
			return []error{onField(t, criterion(e, "table-cel-long", strings.Repeat("true && ", 200)+"true"), "contract.acceptance_criteria[1].expression")}
		},
		"an acceptance criterion nesting more than 32 levels, or with more than 3 comprehensions one inside another": func(t *testing.T, e *harness) []error {
			const field = "contract.acceptance_criteria[1].expression"
			return []error{alike(t,
				onField(t, criterion(e, "table-cel-deep", strings.Repeat("(", 40)+"true"+strings.Repeat(")", 40)), field),
				onField(t, criterion(e, "table-cel-loops", stewardtest.NestedComprehensions(4, 1)), field),
			)}
		},
		"a `parametersSchema` or `resultSchema` over 64 KiB, nesting deeper than 64 levels, with more than 4,096 object keys, following more than 32 `$ref`s one inside another, or unfolding into more than 10,000 subschemas": func(t *testing.T, e *harness) []error {
			return []error{alike(t,
				onField(t, register(e, "table-big", func(c *stewardv1.ToolContract) {
					c.ParametersSchema = `{"description": "` + strings.Repeat("d", 64<<10) + `"}`
				}), "contract.parameters_schema"),
				onField(t, register(e, "table-deep", func(c *stewardv1.ToolContract) { params(c, stewardtest.DeepSchema(3000)) }), "contract.parameters_schema"),
				onField(t, register(e, "table-wide", func(c *stewardv1.ToolContract) { params(c, stewardtest.WideSchema(5000, false)) }), "contract.parameters_schema"),
				onField(t, register(e, "table-chain", func(c *stewardv1.ToolContract) { params(c, stewardtest.RefChainSchema(1000)) }), "contract.parameters_schema"),
				onField(t, register(e, "table-fan", func(c *stewardv1.ToolContract) { c.ResultSchema = stewardtest.RefFanSchema(30) }), "contract.result_schema"),
			)}
		},
		"a schema `$ref` that is not a JSON Pointer into the schema (`#/…`) or points at nothing; a nested `$id`; `$dynamicRef` or `$recursiveRef`": func(t *testing.T, e *harness) []error {
			var out []error
			for i, schema := range []string{
				`{"$ref": "https://example.com/schema.json"}`,
				`{"$ref": "#/$defs/missing"}`,
				`{"properties": {"a": {"$id": "https://example.com/a"}}}`,
				`{"$dynamicRef": "#meta"}`,
			} {
				out = append(out, onField(t, register(e, "table-ref-"+string(rune('a'+i)), func(c *stewardv1.ToolContract) { params(c, schema) }), "contract.parameters_schema"))
			}
			return []error{alike(t, out...)}
		},
		"a schema `pattern` or `patternProperties` key over 1 KiB or compiling to more than 2,000 instructions": func(t *testing.T, e *harness) []error {
			return []error{alike(t,
				onField(t, register(e, "table-pattern-long", func(c *stewardv1.ToolContract) {
					params(c, `{"properties":{"s":{"pattern":"`+strings.Repeat("a", 1025)+`"}}}`)
				}), "contract.parameters_schema"),
				onField(t, register(e, "table-pattern-big", func(c *stewardv1.ToolContract) {
					params(c, `{"patternProperties":{"[a-z]{1000}[a-z]{1000}":{}}}`)
				}), "contract.parameters_schema"),
			)}
		},
		"`params` nested deeper than 64 levels, or that would take more than 25,000 steps to check against the tool's schema (every subschema applied, every enum entry or required name compared, every pattern matched and every format checked counts)": func(t *testing.T, e *harness) []error {
			if err := register(e, "table-fan-tool", func(c *stewardv1.ToolContract) { params(c, stewardtest.RecursiveFanSchema) }); err != nil {
				t.Fatal(err)
			}
			k := governed()
			k.AllowedTools = append(k.AllowedTools, "table-fan-tool")
			id := e.create(t, "table-params", k)
			propose := func(tool, proposal, raw string) error {
				var v structpb.Struct
				if err := v.UnmarshalJSON([]byte(raw)); err != nil {
					t.Fatal(err)
				}
				_, err := e.agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: id, ProposalId: proposal, Tool: tool, Target: "t", Params: &v}))
				return err
			}
			return e.unchanged(t, id, func() error {
				return alike(t,
					onField(t, propose("search", "deep", `{"q": "x", "a": `+stewardtest.NestedArrays(130)+`}`), "params"),
					onField(t, propose("table-fan-tool", "costly", stewardtest.NestedX(40)), "params"),
				)
			})
		},
		"a request nested more than 200 messages deep": func(t *testing.T, e *harness) []error {
			return []error{e.raw(t, "TaskService/ProposeAction", "json", []byte(`{"taskId": "t", "tool": "search", "params": {"a": `+strings.Repeat("[", 250)+strings.Repeat("]", 250)+`}}`))}
		},
	}
}
