package toolreg_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolreg"
)

// TestToolLimitsAreBounded: every field of contract.limits is held to its
// documented range, and a field that would mean nothing alone (a burst
// without a rate, per_tenant without a cap or a rate) is refused rather
// than ignored; each refusal is invalid_argument naming the field.
func TestToolLimitsAreBounded(t *testing.T) {
	tests := []struct {
		name   string
		limits *stewardv1.ToolLimits
		field  string
	}{
		{"cap past its bound", &stewardv1.ToolLimits{MaxConcurrent: toolreg.MaxConcurrentCalls + 1}, "contract.limits.max_concurrent"},
		{"negative rate", &stewardv1.ToolLimits{RatePerSecond: -1}, "contract.limits.rate_per_second"},
		{"rate past its bound", &stewardv1.ToolLimits{RatePerSecond: toolreg.MaxRatePerSecond + 1}, "contract.limits.rate_per_second"},
		{"rate under one call an hour", &stewardv1.ToolLimits{RatePerSecond: toolreg.MinRatePerSecond / 2}, "contract.limits.rate_per_second"},
		{"rate not a number", &stewardv1.ToolLimits{RatePerSecond: math.NaN()}, "contract.limits.rate_per_second"},
		{"burst past its bound", &stewardv1.ToolLimits{RatePerSecond: 1, Burst: toolreg.MaxBurst + 1}, "contract.limits.burst"},
		{"burst without a rate", &stewardv1.ToolLimits{Burst: 3}, "contract.limits.burst"},
		{"per tenant with nothing to split", &stewardv1.ToolLimits{PerTenant: true}, "contract.limits.per_tenant"},
		{"breaker requests past their bound", &stewardv1.ToolLimits{BreakerMinRequests: toolreg.MaxBreakerMinRequests + 1}, "contract.limits.breaker_min_requests"},
		{"breaker failure rate over 1", &stewardv1.ToolLimits{BreakerFailureRate: 1.5}, "contract.limits.breaker_failure_rate"},
		{"breaker failure rate negative", &stewardv1.ToolLimits{BreakerFailureRate: -0.5}, "contract.limits.breaker_failure_rate"},
		{"breaker cool-down too short", &stewardv1.ToolLimits{BreakerCoolDown: durationpb.New(time.Millisecond)}, "contract.limits.breaker_cool_down"},
		{"breaker cool-down too long", &stewardv1.ToolLimits{BreakerCoolDown: durationpb.New(toolreg.MaxBreakerCoolDown + time.Second)}, "contract.limits.breaker_cool_down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			c.Limits = tt.limits
			var e *errs.Error
			if err := toolreg.New(nil).Validate(c); !errors.As(err, &e) || e.Field != tt.field || e.Code != errs.Invalid {
				t.Fatalf("err = %v, want invalid %s", err, tt.field)
			}
		})
	}
	c := valid()
	c.Limits = &stewardv1.ToolLimits{MaxConcurrent: toolreg.MaxConcurrentCalls, RatePerSecond: toolreg.MinRatePerSecond, Burst: toolreg.MaxBurst, PerTenant: true,
		BreakerMinRequests: 1, BreakerFailureRate: 1, BreakerCoolDown: durationpb.New(toolreg.MinBreakerCoolDown)}
	if err := toolreg.New(nil).Validate(c); err != nil {
		t.Fatalf("limits at their bounds were refused: %v", err)
	}
}
