package control

import (
	"fmt"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// compensationReport is the reason a compensated task ends with: why it
// was ended, then how its compensations went, e.g. "deadline missed;
// compensated 2 of 3 actions; the compensation of act-x failed: 503".
// stopped, if set, is why the rest could not be undone.
func compensationReport(t *stewardv1.Task, stopped string) string {
	done, total := 0, 0
	var notes []string
	seen := map[string]bool{}
	for _, a := range t.Actions {
		if a.Compensates == "" || !task.ActionEnded(a.Status) || seen[a.Compensates] {
			continue
		}
		seen[a.Compensates] = true
		total++
		why := task.Clip(a.Outcome.GetReason())
		switch a.Status {
		case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
			done++
		case stewardv1.ActionStatus_ACTION_STATUS_FAILED:
			notes = append(notes, fmt.Sprintf("the compensation of %s failed: %s", a.Compensates, why))
		case stewardv1.ActionStatus_ACTION_STATUS_DENIED:
			notes = append(notes, fmt.Sprintf("the compensation of %s was denied: %s", a.Compensates, why))
		case stewardv1.ActionStatus_ACTION_STATUS_REJECTED:
			notes = append(notes, fmt.Sprintf("the compensation of %s was %s", a.Compensates, why)) // "rejected by …"
		default:
			notes = append(notes, fmt.Sprintf("the compensation of %s was %s", a.Compensates, task.ActionStatusName(a.Status)))
		}
	}
	left := len(t.Compensations)
	total += left
	if stopped != "" {
		notes = append(notes, task.Clip(stopped))
		if left > 1 {
			notes = append(notes, fmt.Sprintf("%d more not attempted", left-1))
		}
	}
	summary := "compensated " + count(total, "action")
	if done < total || len(notes) > 0 {
		summary = fmt.Sprintf("compensated %d of %s; %s", done, count(total, "action"), strings.Join(notes, "; "))
	}
	if why := t.StatusReason; why != "" && why != "compensating" {
		return why + "; " + summary
	}
	return summary
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
