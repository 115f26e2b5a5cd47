package execution

import (
	"fmt"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/execution/adapter"
)

// One approval, at most one effect. A failed call is sent again only when
// that cannot do the work twice:
//
//   - a request that surely never reached the tool (no connection, a DNS
//     failure, refused) may always be sent again;
//   - one that may have arrived (the tool answered 408, 429 or 5xx, or no
//     answer came after it was sent) may be sent again blind only to a
//     read, or to a tool whose contract honours the op_key and still
//     remembers it (its retention has not run out since the first try);
//   - a model's call (docs/models.md) is paid: one that may have arrived
//     is never sent again blind, a read though it is;
//   - for any other tool its outcome is unknown, settled by the tool's
//     status query or by a person (SettleAction), and the call is made
//     again only after a settled not_accepted.
//
// docs/retries.md has the table.

// blindRetry says whether a call of tool that may have arrived may be sent
// again as it is, and if not, why.
func blindRetry(tool *stewardv1.ToolContract, firstTry, now time.Time) (bool, string) {
	if isModel(tool) {
		return false, fmt.Sprintf("tool %s is a model, whose every call is paid", tool.GetName())
	}
	if tool.GetEffectClass() == stewardv1.EffectClass_EFFECT_CLASS_READ {
		return true, ""
	}
	if !toolreg.MayRepeat(tool) {
		return false, fmt.Sprintf("tool %s is %s and does not honour the op_key", tool.GetName(), effectName(tool.GetEffectClass()))
	}
	idem := tool.GetIdempotency()
	if r := idem.GetRetention(); r != nil && r.AsDuration() > 0 && now.Sub(firstTry) >= r.AsDuration() {
		return false, fmt.Sprintf("tool %s remembers an op_key for %s, and the first try was %s ago", tool.GetName(), r.AsDuration(), now.Sub(firstTry).Round(time.Second))
	}
	return true, ""
}

// eligible applies the rule to res, a call of tool first tried at
// firstTry: a transient failure that may have arrived becomes unknown when
// a blind retry could act twice. An unknown outcome (no answer) stays
// unknown for every tool, settled by the status query or a person: a
// retry is allowed for some tools, never required, and an unknown turned
// into a failure could end failed with the work done.
func eligible(res adapter.Result, tool *stewardv1.ToolContract, firstTry, now time.Time) adapter.Result {
	if !res.Arrived || res.Status != stewardv1.ActionStatus_ACTION_STATUS_FAILED || res.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT {
		return res
	}
	if ok, why := blindRetry(tool, firstTry, now); !ok {
		return mayHaveActed(res, why)
	}
	return res
}

// mayHaveActed is res as an unknown outcome: the call may have done the
// work, and why it is not made again.
func mayHaveActed(res adapter.Result, why string) adapter.Result {
	res.Status, res.FailureClass = stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, stewardv1.FailureClass_FAILURE_CLASS_UNSPECIFIED
	res.Reason = fmt.Sprintf("%s, after the request arrived: it may have done the work, and %s, so it is not called again until its outcome is settled (by its status query or SettleAction)", res.Reason, why)
	return res
}

// pastRetention says why a retry of a call of tool, first permitted at
// firstTry, may not go out now: the tool may have forgotten its op_key,
// so an earlier try that arrived would be done again. "" when it may.
func pastRetention(tool *stewardv1.ToolContract, firstTry, now time.Time) string {
	if tool.GetEffectClass() == stewardv1.EffectClass_EFFECT_CLASS_READ || !toolreg.MayRepeat(tool) {
		return "" // reads repeat safely; other tools are retried only when nothing arrived
	}
	_, why := blindRetry(tool, firstTry, now)
	return why
}

func effectName(c stewardv1.EffectClass) string {
	switch c {
	case stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE:
		return "an idempotent write"
	case stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE:
		return "a reversible write"
	case stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE:
		return "irreversible"
	}
	return c.String()
}
