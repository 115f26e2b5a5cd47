package app

import (
	"fmt"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// runsEnded counts a schedule's ended runs by outcome: "3 accepted, 1
// failed, 0 cancelled"; empty while none has ended.
func runsEnded(sc *stewardv1.Schedule) string {
	if sc.RunsAccepted+sc.RunsFailed+sc.RunsCancelled == 0 {
		return ""
	}
	return fmt.Sprintf("%d accepted, %d failed, %d cancelled", sc.RunsAccepted, sc.RunsFailed, sc.RunsCancelled)
}

// lastRunEnd is how the latest run to end ended: "run-… failed at …: why".
func lastRunEnd(sc *stewardv1.Schedule) string {
	e := sc.LastRunEnd
	if e == nil {
		return ""
	}
	out := []string{e.TaskId, word(e.Outcome, "RUN_OUTCOME_")}
	if e.Superseded {
		out = append(out, "by a later firing")
	}
	out = append(out, "at", when(e.EndedAt))
	line := strings.Join(out, " ")
	if e.Reason != "" {
		line += ": " + short(e.Reason, 80)
	}
	return line
}
