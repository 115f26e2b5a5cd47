package execution

import (
	"math/rand/v2"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolreg"
)

// DefaultRetryPolicy applies where neither the action nor its tool sets a
// field: three attempts, backoff from half a second up to 30 seconds, and
// no retry more than ten minutes after the first dispatch.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 3, InitialBackoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second, MaxElapsed: 10 * time.Minute}

// RetryPolicy is a retry policy with every field decided.
type RetryPolicy struct {
	MaxAttempts    uint32
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	MaxElapsed     time.Duration
}

// retryPolicyOf resolves the policy in force for a: the action's own (the
// tool's, narrowed by the proposal), then the tool's, then the defaults,
// field by field.
func retryPolicyOf(a *stewardv1.Action, tool *stewardv1.ToolContract) RetryPolicy {
	p := DefaultRetryPolicy
	for _, rp := range []*stewardv1.RetryPolicy{tool.GetRetryPolicy(), a.GetRetryPolicy()} {
		if rp == nil {
			continue
		}
		if rp.MaxAttempts > 0 {
			p.MaxAttempts = min(rp.MaxAttempts, toolreg.MaxAttempts)
		}
		if d := rp.InitialBackoff.AsDuration(); rp.InitialBackoff != nil && d > 0 {
			p.InitialBackoff = d
		}
		if d := rp.MaxBackoff.AsDuration(); rp.MaxBackoff != nil && d > 0 {
			p.MaxBackoff = d
		}
		if d := rp.MaxElapsed.AsDuration(); rp.MaxElapsed != nil && d > 0 {
			p.MaxElapsed = d
		}
	}
	p.MaxBackoff = max(p.MaxBackoff, p.InitialBackoff)
	return p
}

// next returns how long to wait before attempt (2, 3, …) and whether a
// retry is allowed at all: attempts left, and the wait ending within
// MaxElapsed of start. The wait is exponential with full jitter — a random
// time up to the exponential ceiling — so that many actions failing
// together do not retry together.
func (p RetryPolicy) next(attempt uint32, start, now time.Time) (time.Duration, bool) {
	if attempt > p.MaxAttempts {
		return 0, false
	}
	ceiling := p.InitialBackoff
	for i := uint32(2); i < attempt && ceiling < p.MaxBackoff; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, p.MaxBackoff)
	wait := time.Duration(0)
	if ceiling > 0 {
		wait = rand.N(ceiling) + 1
	}
	if p.MaxElapsed > 0 && now.Add(wait).Sub(start) > p.MaxElapsed {
		return 0, false
	}
	return wait, true
}
