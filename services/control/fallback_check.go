package control

import (
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolpin"
)

// checkFallbacks checks the contract's declared fallbacks
// (docs/fallbacks.md): ids unique, one fallback per primary, never a
// fallback to itself, a tool fallback the contract allows, and a trigger
// of the fallback's kind with its way back.
func checkFallbacks(c *stewardv1.TaskContract) error {
	if err := checkList("contract.fallbacks", len(c.Fallbacks)); err != nil {
		return err
	}
	ids, primaries := map[string]bool{}, map[string]bool{}
	for i, fb := range c.Fallbacks {
		f := fmt.Sprintf("contract.fallbacks[%d]", i)
		checks := []error{
			checkText(f+".id", fb.Id, MaxRefLen, true),
			checkText(f+".primary", fb.Primary, MaxRefLen, true),
			checkText(f+".fallback", fb.Fallback, MaxRefLen, true),
		}
		for _, err := range checks {
			if err != nil {
				return err
			}
		}
		primary := fb.Kind.String() + "/" + fb.Primary
		switch {
		case ids[fb.Id]:
			return errs.Field(f+".id", "%s appears twice", errs.Quote(fb.Id))
		case fb.Kind != toolFallback && fb.Kind != modelFallback:
			return errs.Field(f+".kind", "is required (FALLBACK_KIND_TOOL or FALLBACK_KIND_MODEL)")
		case fb.Fallback == fb.Primary:
			return errs.Field(f+".fallback", "%s is its own primary: a fallback stands in for another", errs.Quote(fb.Fallback))
		case primaries[primary]:
			return errs.Field(f+".primary", "%s already has a fallback: one per primary", errs.Quote(fb.Primary))
		case fb.Kind == toolFallback && !toolpin.Allows(c.AllowedTools, fb.Fallback, pinOf(c.AllowedTools, fb.Fallback)):
			return errs.Field(f+".fallback", "tool %s is not among contract.allowed_tools (%v): a fallback runs only what the contract allows", errs.Quote(fb.Fallback), c.AllowedTools)
		}
		ids[fb.Id], primaries[primary] = true, true
		if err := checkTrigger(f, fb); err != nil {
			return err
		}
	}
	return nil
}

func pinOf(allowed []string, name string) string {
	pin, _ := toolpin.Find(allowed, name)
	return pin
}

// checkTrigger checks fb's trigger: exactly one, of its kind, and its way
// back — a duration for a failure class or latency trigger, none for a
// breaker (it clears when the breaker closes) or a model (when the primary
// decides again).
func checkTrigger(f string, fb *stewardv1.Fallback) error {
	tr := fb.GetTrigger()
	n := 0
	for _, set := range []bool{len(tr.GetFailureClasses()) > 0, tr.GetLatencyOver() != nil, tr.GetBreakerOpen(), tr.GetReported()} {
		if set {
			n++
		}
	}
	timed := len(tr.GetFailureClasses()) > 0 || tr.GetLatencyOver() != nil
	switch {
	case fb.Kind == modelFallback && n == 1 && tr.GetReported(), fb.Kind == modelFallback && n == 0:
		if fb.RetryPrimaryAfter != nil {
			return errs.Field(f+".retry_primary_after", "is for a tool's failure class or latency trigger: a model fallback clears when the primary decides again")
		}
		return nil
	case fb.Kind == modelFallback:
		return errs.Field(f+".trigger", "of a model fallback is the agent's report (reported): Steward does not call the agent's models")
	case n == 0:
		return errs.Field(f+".trigger", "is required: one of failure_classes, latency_over, breaker_open")
	case n > 1:
		return errs.Field(f+".trigger", "sets %d triggers; a fallback has one", n)
	case tr.GetReported():
		return errs.Field(f+".trigger.reported", "is a model fallback's trigger")
	case tr.GetLatencyOver() != nil && tr.LatencyOver.AsDuration() <= 0:
		return errs.Field(f+".trigger.latency_over", "must be positive")
	case timed && fb.GetRetryPrimaryAfter().AsDuration() <= 0:
		return errs.Field(f+".retry_primary_after", "is required with this trigger, and positive: how long after engaging the primary is tried again")
	case !timed && fb.RetryPrimaryAfter != nil:
		return errs.Field(f+".retry_primary_after", "is not for a breaker trigger: it clears when the breaker closes")
	}
	for j, fc := range tr.GetFailureClasses() {
		switch fc {
		case stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC,
			stewardv1.FailureClass_FAILURE_CLASS_VALIDATION:
		default:
			return errs.Field(fmt.Sprintf("%s.trigger.failure_classes[%d]", f, j), "%s is not a failure class a failed outcome has (TRANSIENT, DETERMINISTIC, VALIDATION)", fc)
		}
	}
	return nil
}
