package state

import (
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Timeline tells a task's events as sentences a person can follow.
func Timeline(recs []*stewardv1.EventRecord) []*stewardv1.TimelineEntry {
	out := make([]*stewardv1.TimelineEntry, 0, len(recs))
	for _, r := range recs {
		ev := r.Event
		out = append(out, &stewardv1.TimelineEntry{
			Sequence: r.Sequence,
			Time:     ev.Time,
			Type:     ev.Type,
			Actor:    actorName(ev.Actor),
			Summary:  summary(ev),
		})
	}
	return out
}

func actorName(a *stewardv1.Actor) string {
	switch {
	case a == nil:
		return "unknown"
	case a.Plane == "":
		return a.Principal
	default:
		return a.Principal + " via " + a.Plane
	}
}

func summary(ev *stewardv1.Event) string {
	who := actorName(ev.Actor)
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_TaskCreated:
		c := p.TaskCreated.Contract
		return fmt.Sprintf("%s created the task %q for %s, accountable owner %s, risk %s",
			who, c.GetIntent(), c.GetRequesterRef(), c.GetAccountableOwnerRef(), riskName(c.GetRiskTier()))
	case *stewardv1.Event_TaskStarted:
		return "The task started running"
	case *stewardv1.Event_TaskPaused:
		return withReason(who+" paused the task", p.TaskPaused.Reason)
	case *stewardv1.Event_TaskResumed:
		return withReason(who+" resumed the task", p.TaskResumed.Reason)
	case *stewardv1.Event_TaskCancelled:
		return withReason(who+" cancelled the task", p.TaskCancelled.Reason)
	default:
		return fmt.Sprintf("%s recorded %s", who, ev.Type)
	}
}

func withReason(s, reason string) string {
	if reason == "" {
		return s
	}
	return s + ": " + reason
}

func riskName(t stewardv1.RiskTier) string {
	switch t {
	case stewardv1.RiskTier_RISK_TIER_LOW:
		return "low"
	case stewardv1.RiskTier_RISK_TIER_MEDIUM:
		return "medium"
	case stewardv1.RiskTier_RISK_TIER_HIGH:
		return "high"
	case stewardv1.RiskTier_RISK_TIER_CRITICAL:
		return "critical"
	}
	return "unspecified"
}
