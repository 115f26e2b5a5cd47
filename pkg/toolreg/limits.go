package toolreg

import (
	"math"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
)

// The documented ranges of a contract's limits (docs/errors.md). Zero (or
// unset) means no cap, no rate, the plane's breaker defaults.
const (
	// MaxConcurrentCalls bounds limits.max_concurrent: the state of a cap
	// is one entry that lists its calls in flight.
	MaxConcurrentCalls = 256
	// MinRatePerSecond, MaxRatePerSecond and MaxBurst bound
	// limits.rate_per_second and limits.burst: under one call an hour a
	// call waits past any permit's life; past the maxima a rate holds
	// nothing back that the cap and the plane do not.
	MinRatePerSecond = 1.0 / 3600
	MaxRatePerSecond = 1000
	MaxBurst         = 1000
	// MaxBreakerMinRequests bounds limits.breaker_min_requests.
	MaxBreakerMinRequests = 1000
	// MinBreakerCoolDown and MaxBreakerCoolDown bound
	// limits.breaker_cool_down: shorter probes a failing service in a
	// hot loop, longer cuts it off past any retry.
	MinBreakerCoolDown = time.Second
	MaxBreakerCoolDown = time.Hour
)

// checkLimits checks contract.limits: every field in its range, a burst
// only with a rate, per_tenant only with a cap or a rate to split.
func checkLimits(l *stewardv1.ToolLimits) error {
	if l == nil {
		return nil
	}
	rate := l.RatePerSecond
	switch {
	case l.MaxConcurrent > MaxConcurrentCalls:
		return errs.Field("contract.limits.max_concurrent", "is more than %d", MaxConcurrentCalls)
	case math.IsNaN(rate) || rate < 0 || rate > MaxRatePerSecond || rate > 0 && rate < MinRatePerSecond:
		return errs.Field("contract.limits.rate_per_second", "%v is outside one call an hour (%v) – %d a second", rate, MinRatePerSecond, MaxRatePerSecond)
	case l.Burst > MaxBurst:
		return errs.Field("contract.limits.burst", "is more than %d", MaxBurst)
	case l.Burst != 0 && rate == 0:
		return errs.Field("contract.limits.burst", "bounds the bursts of a rate: set rate_per_second too, or leave it out")
	case l.PerTenant && l.MaxConcurrent == 0 && rate == 0:
		return errs.Field("contract.limits.per_tenant", "splits a cap or a rate between tenants: set max_concurrent or rate_per_second too, or leave it out")
	case l.BreakerMinRequests > MaxBreakerMinRequests:
		return errs.Field("contract.limits.breaker_min_requests", "is more than %d", MaxBreakerMinRequests)
	case math.IsNaN(l.BreakerFailureRate) || l.BreakerFailureRate < 0 || l.BreakerFailureRate > 1:
		return errs.Field("contract.limits.breaker_failure_rate", "%v is outside (0, 1]", l.BreakerFailureRate)
	}
	return limits.Duration("contract.limits.breaker_cool_down", l.BreakerCoolDown, MinBreakerCoolDown, MaxBreakerCoolDown)
}
