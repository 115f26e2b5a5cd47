package toolreg

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// NarrowRetry returns the retry policy an action runs under: its tool's,
// narrowed by the proposer's. A proposer may lower any field the tool
// sets, or set one the tool leaves open, but never raise one past the
// tool's: the tool's policy is its author's word on how hard Steward may
// press their service. A zero field in the request keeps the tool's
// value; a field unset in the result (nil for no policy at all) leaves the
// choice to the execution plane's defaults. Errors name the field as
// prefix + "<field>", prefix being where req sits ("retry_policy.").
func NarrowRetry(prefix string, tool *stewardv1.ToolContract, req *stewardv1.RetryPolicy) (*stewardv1.RetryPolicy, error) {
	limit := tool.GetRetryPolicy()
	if req == nil {
		return proto.CloneOf(limit), nil
	}
	if err := CheckRetryDurations(prefix, req); err != nil {
		return nil, err
	}
	out := &stewardv1.RetryPolicy{}
	if limit != nil {
		out = proto.CloneOf(limit)
	}
	if n := req.MaxAttempts; n > 0 {
		if ceiling := limit.GetMaxAttempts(); ceiling > 0 && n > ceiling {
			return nil, errs.Field(prefix+"max_attempts", "%d is more than tool %s@%s allows (%d); a proposal may only lower it", n, tool.Name, tool.Version, ceiling)
		}
		out.MaxAttempts = n
	}
	durations := []struct {
		name       string
		req, limit *durationpb.Duration
		set        func(*durationpb.Duration)
	}{
		{"initial_backoff", req.InitialBackoff, limit.GetInitialBackoff(), func(d *durationpb.Duration) { out.InitialBackoff = d }},
		{"max_backoff", req.MaxBackoff, limit.GetMaxBackoff(), func(d *durationpb.Duration) { out.MaxBackoff = d }},
		{"max_elapsed", req.MaxElapsed, limit.GetMaxElapsed(), func(d *durationpb.Duration) { out.MaxElapsed = d }},
	}
	for _, f := range durations {
		if f.req == nil {
			continue
		}
		field := prefix + f.name
		d := f.req.AsDuration() // valid and in range: checked above
		switch {
		case d == 0:
			continue // not set: the tool's stands
		case f.limit != nil && f.limit.AsDuration() > 0 && d > f.limit.AsDuration():
			return nil, errs.Field(field, "%s is longer than tool %s@%s allows (%s); a proposal may only shorten it", d, tool.Name, tool.Version, f.limit.AsDuration())
		}
		f.set(durationpb.New(d))
	}
	// Lowering max_backoff alone may put it under the tool's initial
	// backoff; a policy that contradicts itself is refused, not guessed at.
	if initial, most := out.GetInitialBackoff().AsDuration(), out.GetMaxBackoff().AsDuration(); initial > 0 && most > 0 && initial > most {
		field := prefix + "max_backoff"
		if positive(req.InitialBackoff) {
			field = prefix + "initial_backoff"
		}
		return nil, errs.Field(field, "initial backoff %s is longer than max backoff %s", initial, most)
	}
	if proto.Size(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func positive(d *durationpb.Duration) bool { return d.AsDuration() > 0 }
