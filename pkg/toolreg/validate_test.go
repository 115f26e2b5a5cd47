package toolreg_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolreg"
)

func valid() *stewardv1.ToolContract {
	return &stewardv1.ToolContract{
		Name: "search", Version: "1.0.0", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		DataSensitivity:  stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC,
		ParametersSchema: `{"type":"object"}`,
		Endpoint:         &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: "https://tools.example/search"}},
	}
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*stewardv1.ToolContract)
		field string
	}{
		{"no name", func(c *stewardv1.ToolContract) { c.Name = "" }, "contract.name"},
		{"dotted name", func(c *stewardv1.ToolContract) { c.Name = "a.b" }, "contract.name"},
		{"no version", func(c *stewardv1.ToolContract) { c.Version = "" }, "contract.version"},
		{"schema not JSON", func(c *stewardv1.ToolContract) { c.ParametersSchema = "{" }, "contract.parameters_schema"},
		{"no effect class", func(c *stewardv1.ToolContract) { c.EffectClass = 0 }, "contract.effect_class"},
		{"unknown effect class", func(c *stewardv1.ToolContract) { c.EffectClass = 9 }, "contract.effect_class"},
		{"service key a wildcard", func(c *stewardv1.ToolContract) { c.ServiceKey = ">" }, "contract.service_key"},
		{"service key a star", func(c *stewardv1.ToolContract) { c.ServiceKey = "*" }, "contract.service_key"},
		{"service key with a dot", func(c *stewardv1.ToolContract) { c.ServiceKey = "a.b" }, "contract.service_key"},
		{"service key too long", func(c *stewardv1.ToolContract) { c.ServiceKey = strings.Repeat("k", 65) }, "contract.service_key"},
		{"no data sensitivity", func(c *stewardv1.ToolContract) { c.DataSensitivity = 0 }, "contract.data_sensitivity"},
		{"unknown data sensitivity", func(c *stewardv1.ToolContract) { c.DataSensitivity = 9 }, "contract.data_sensitivity"},
		{"unknown default approval", func(c *stewardv1.ToolContract) { c.DefaultApproval = 9 }, "contract.default_approval"},
		{"reversible without compensation", func(c *stewardv1.ToolContract) {
			c.EffectClass = stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE
		}, "contract.compensating_tool"},
		{"no endpoint", func(c *stewardv1.ToolContract) { c.Endpoint = nil }, "contract.endpoint"},
		{"relative url", func(c *stewardv1.ToolContract) {
			c.Endpoint = &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: "/search"}}
		}, "contract.http.url"},
		{"status query without url", func(c *stewardv1.ToolContract) { c.StatusQuery = true }, "contract.http.status_url"},
		{"status url without status query", func(c *stewardv1.ToolContract) {
			c.Endpoint = &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: "http://tool.example/call", StatusUrl: "http://tool.example/status"}}
		}, "contract.status_query"},
		{"unknown builtin", func(c *stewardv1.ToolContract) {
			c.Endpoint = &stewardv1.ToolContract_Builtin{Builtin: &stewardv1.BuiltinEndpoint{Kind: "shell"}}
		}, "contract.builtin.kind"},
		{"a model without a base url", modelEdit(func(m *stewardv1.ModelEndpoint) { m.BaseUrl = "" }), "contract.model.base_url"},
		{"a model over ftp", modelEdit(func(m *stewardv1.ModelEndpoint) { m.BaseUrl = "ftp://models.example/v1" }), "contract.model.base_url"},
		{"a model without its name", modelEdit(func(m *stewardv1.ModelEndpoint) { m.Model = " " }), "contract.model.model"},
		{"a model without a provider", modelEdit(func(m *stewardv1.ModelEndpoint) { m.Provider = "" }), "contract.model.provider"},
		{"a model without a token cap", modelEdit(func(m *stewardv1.ModelEndpoint) { m.MaxTokens = 0 }), "contract.model.max_tokens"},
		{"a model past the token cap", modelEdit(func(m *stewardv1.ModelEndpoint) { m.MaxTokens = toolreg.MaxModelTokens + 1 }), "contract.model.max_tokens"},
		{"a negative input price", modelEdit(func(m *stewardv1.ModelEndpoint) { m.InputMicrosPer_1K = -1 }), "contract.model.input_micros_per_1k"},
		{"a negative output price", modelEdit(func(m *stewardv1.ModelEndpoint) { m.OutputMicrosPer_1K = -1 }), "contract.model.output_micros_per_1k"},
		{"a long key file path", modelEdit(func(m *stewardv1.ModelEndpoint) { m.KeyFile = strings.Repeat("k", 5000) }), "contract.model.key_file"},
		{"a model that writes", func(c *stewardv1.ToolContract) {
			modelEdit(func(*stewardv1.ModelEndpoint) {})(c)
			c.EffectClass = stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE
		}, "contract.effect_class"},
		{"a model that honours keys", func(c *stewardv1.ToolContract) {
			modelEdit(func(*stewardv1.ModelEndpoint) {})(c)
			c.Idempotency = &stewardv1.IdempotencySupport{HonoursKey: true}
		}, "contract.idempotency.honours_key"},
		{"timeout too long", func(c *stewardv1.ToolContract) { c.Timeout = durationpb.New(toolreg.MaxTimeout * 2) }, "contract.timeout"},
		{"timeout of a nanosecond", func(c *stewardv1.ToolContract) { c.Timeout = durationpb.New(time.Nanosecond) }, "contract.timeout"},
		{"retention of 10,000 years", func(c *stewardv1.ToolContract) {
			c.Idempotency = &stewardv1.IdempotencySupport{HonoursKey: true, Retention: &durationpb.Duration{Seconds: 10_000 * 365 * 24 * 3600}}
		}, "contract.idempotency.retention"},
		{"backoff of a nanosecond", func(c *stewardv1.ToolContract) {
			c.RetryPolicy = &stewardv1.RetryPolicy{InitialBackoff: durationpb.New(time.Nanosecond)}
		}, "contract.retry_policy.initial_backoff"},
		{"backoff past a day", func(c *stewardv1.ToolContract) {
			c.RetryPolicy = &stewardv1.RetryPolicy{MaxBackoff: durationpb.New(toolreg.MaxRetryBackoff + time.Second)}
		}, "contract.retry_policy.max_backoff"},
		{"retries for a year", func(c *stewardv1.ToolContract) {
			c.RetryPolicy = &stewardv1.RetryPolicy{MaxElapsed: durationpb.New(365 * 24 * time.Hour)}
		}, "contract.retry_policy.max_elapsed"},
	}
	if err := toolreg.New(nil).Validate(valid()); err != nil {
		t.Fatalf("a valid contract was refused: %v", err)
	}
	keyed := valid()
	keyed.ServiceKey = "payments_eu-1"
	if err := toolreg.New(nil).Validate(keyed); err != nil {
		t.Fatalf("a valid service key was refused: %v", err)
	}
	long := valid()
	long.Description = strings.Repeat("d", 4097)
	if err := toolreg.New(nil).Validate(long); !errs.Is(err, errs.TooLarge) || !strings.Contains(err.Error(), "contract.description") {
		t.Errorf("a description past 4 KiB: %v, want too large, naming contract.description", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.edit(c)
			err := toolreg.New(nil).Validate(c)
			var e *errs.Error
			if !errors.As(err, &e) || e.Field != tt.field || e.Code != errs.Invalid {
				t.Fatalf("err = %v, want invalid %s", err, tt.field)
			}
		})
	}
}

// modelEdit makes the contract a model tool's, a read, and edits its
// endpoint.
func modelEdit(edit func(*stewardv1.ModelEndpoint)) func(*stewardv1.ToolContract) {
	return func(c *stewardv1.ToolContract) {
		m := &stewardv1.ModelEndpoint{BaseUrl: "https://models.example/v1", Model: "gpt-x", Provider: "openai", MaxTokens: 100}
		edit(m)
		c.EffectClass, c.StatusQuery, c.Idempotency = stewardv1.EffectClass_EFFECT_CLASS_READ, false, nil
		c.Endpoint = &stewardv1.ToolContract_Model{Model: m}
	}
}
