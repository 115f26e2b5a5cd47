package app

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// currentMilestone names the task's phase for `tasks show`: the current
// milestone and its title, or that all are done.
func currentMilestone(t *stewardv1.Task) string {
	if len(t.Milestones) == 0 {
		return ""
	}
	for _, m := range t.Milestones {
		if m.MilestoneId == t.CurrentMilestone {
			return fmt.Sprintf("%s (%s), %d of %d", m.MilestoneId, m.Title, position(t, m.MilestoneId), len(t.Milestones))
		}
	}
	return "all done"
}

func position(t *stewardv1.Task, id string) int {
	for i, m := range t.Milestones {
		if m.MilestoneId == id {
			return i + 1
		}
	}
	return 0
}

// milestoneTable prints the task's milestones in the contract's order:
// status, the agent's progress, actions against the cap, spend against
// the budget line; the current one marked.
func (c *cli) milestoneTable(t *stewardv1.Task) error {
	rows := make([][]string, 0, len(t.Milestones))
	for _, m := range t.Milestones {
		mark := ""
		if m.MilestoneId == t.CurrentMilestone {
			mark = "*"
		}
		rows = append(rows, []string{mark + m.MilestoneId, short(m.Title, 40), word(m.Status, "MILESTONE_STATUS_"), progressCell(m),
			ofCap(int64(m.ActionsUsed), int64(m.MaxActions)), spendCell(m)})
	}
	return c.table([]string{"MILESTONE", "TITLE", "STATUS", "PROGRESS", "ACTIONS", "SPEND"}, rows)
}

func progressCell(m *stewardv1.MilestoneState) string {
	if m.ProgressedAt == nil {
		return ""
	}
	s := strconv.FormatUint(uint64(m.Percent), 10) + "%"
	if m.Note != "" {
		s += " " + short(m.Note, 40)
	}
	return s
}

// ofCap is "used/limit", or "used" for no limit.
func ofCap(used, limit int64) string {
	if limit == 0 {
		return strconv.FormatInt(used, 10)
	}
	return fmt.Sprintf("%d/%d", used, limit)
}

func spendCell(m *stewardv1.MilestoneState) string {
	s := ofCap(m.Tokens, m.MaxTokens) + " tokens"
	if m.CostMicros > 0 || m.MaxCostMicros > 0 {
		s += ", " + ofCap(m.CostMicros, m.MaxCostMicros) + " micros"
	}
	return s
}

// tasksProgress is the agent's ReportProgress from a shell.
func (c *cli) tasksProgress() *cobra.Command {
	var percent uint32
	var note string
	cmd := c.verb("progress TASK MILESTONE", "say how far a milestone of the task has come (its agent only)", []string{"TASK", "MILESTONE"}, func(ctx context.Context, s *steward.Client, args []string) error {
		resp, err := s.ReportProgress(ctx, args[0], args[1], percent, note)
		if err != nil {
			return fmt.Errorf("task %s: %w", args[0], err)
		}
		if c.json() {
			return c.message(resp)
		}
		m := resp.Milestone
		fields(c.stdout, "milestone", m.GetMilestoneId(), "status", word(m.GetStatus(), "MILESTONE_STATUS_"), "progress", progressCell(m),
			"recorded", strconv.FormatBool(resp.Recorded), "current", resp.CurrentMilestone)
		return nil
	})
	cmd.Flags().Uint32Var(&percent, "percent", 0, "how far it has come, `0-100`")
	cmd.Flags().StringVar(&note, "note", "", "what is done and what is left, in a few words")
	return cmd
}
