package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// The acceptance owner's verbs: a produced result is accepted, or returned
// with what must change (docs/acceptance.md). --round binds the decision
// to the round 'tasks show' showed, as --hash binds an approval to its
// action: a result produced again since is not decided by mistake.

func (c *cli) tasksAccept() *cobra.Command {
	var reason, requestID string
	var round uint32
	cmd := c.verb("accept TASK", "accept a produced task's result (its acceptance owner): the task is accepted", []string{"TASK"}, func(ctx context.Context, s *steward.Client, args []string) error {
		t, err := s.AcceptTask(ctx, &stewardv1.AcceptTaskRequest{TaskId: args[0], Reason: reason, Round: round, RequestId: requestID})
		if err != nil {
			return fmt.Errorf("accept %s: %w", args[0], err)
		}
		return c.taskMoved(t)
	})
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the task's record")
	cmd.Flags().Uint32Var(&round, "round", 0, "the acceptance `ROUND` 'tasks show' showed; refused if the result was produced again since")
	requestIDFlag(cmd, &requestID)
	return cmd
}

func (c *cli) tasksReturn() *cobra.Command {
	var reasons []string
	var requestID string
	var round uint32
	cmd := c.verb("return TASK --reason R", "return a produced task's result to its agent with what must change (its acceptance owner)", []string{"TASK"}, func(ctx context.Context, s *steward.Client, args []string) error {
		if len(reasons) == 0 {
			return usagef("--reason is required: say what must change (repeat it for each thing)")
		}
		t, err := s.ReturnTask(ctx, &stewardv1.ReturnTaskRequest{TaskId: args[0], Reasons: reasons, Round: round, RequestId: requestID})
		if err != nil {
			return fmt.Errorf("return %s: %w", args[0], err)
		}
		return c.taskMoved(t)
	})
	cmd.Flags().StringArrayVar(&reasons, "reason", nil, "what must change; repeat for each")
	cmd.Flags().Uint32Var(&round, "round", 0, "the acceptance `ROUND` 'tasks show' showed; refused if the result was produced again since")
	requestIDFlag(cmd, &requestID)
	return cmd
}

// acceptanceLine is the task's last acceptance round, for 'tasks show'.
func acceptanceLine(t *stewardv1.Task) string {
	if len(t.Acceptance) == 0 {
		return ""
	}
	r := t.Acceptance[len(t.Acceptance)-1]
	line := fmt.Sprintf("round %d, produced %s by %s", r.Round, when(r.ProducedAt), r.ProducedBy)
	switch {
	case r.DecidedBy != "":
		line += fmt.Sprintf(", %s by %s", word(r.Decision, "ACCEPTANCE_DECISION_"), r.DecidedBy)
	case r.Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_UNSPECIFIED:
		line += ", " + word(r.Decision, "ACCEPTANCE_DECISION_")
	}
	return line
}
