package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// What a person answers for a task: a question, an unknown outcome, a
// budget.

func (c *cli) questionsCommand() *cobra.Command {
	return c.group("questions", "see the questions tasks wait on, and answer them", c.questionsLs(), c.questionsAnswer())
}

func (c *cli) questionsLs() *cobra.Command {
	return c.verb("ls", "list the tasks that wait for input, and what they ask", nil, func(ctx context.Context, s *steward.Client, _ []string) error {
		// A task suspended because its question waited too long still
		// waits for the answer (docs/input.md).
		listed, err := listTasks(ctx, s, &stewardv1.ListTasksRequest{Statuses: []stewardv1.TaskStatus{
			stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT, stewardv1.TaskStatus_TASK_STATUS_SUSPENDED}}, 0)
		if err != nil {
			return err
		}
		waiting := slices.DeleteFunc(listed, func(t *stewardv1.Task) bool { return t.OpenInput == nil })
		if c.json() {
			return c.taskRows(waiting)
		}
		rows := make([][]string, 0, len(waiting))
		for _, t := range waiting {
			q := t.OpenInput
			rows = append(rows, []string{t.Contract.GetTaskId(), word(q.GetCause(), "NEEDS_INPUT_CAUSE_"), when(q.GetAskedAt()), q.GetAskedBy(),
				short(q.GetQuestion(), 60), strings.Join(q.GetChoices(), " | ")})
		}
		return c.table([]string{"TASK", "CAUSE", "ASKED", "BY", "QUESTION", "CHOICES"}, rows)
	})
}

func (c *cli) questionsAnswer() *cobra.Command {
	var requestID string
	cmd := c.verb("answer TASK ANSWER", "answer a task's question (one of its choices, when it offers some); the task runs again", []string{"TASK", "ANSWER"}, func(ctx context.Context, s *steward.Client, args []string) error {
		t, err := s.ProvideInput(ctx, &stewardv1.ProvideInputRequest{TaskId: args[0], Answer: args[1], RequestId: requestID})
		if err != nil {
			return fmt.Errorf("answer %s: %w", args[0], err)
		}
		return c.taskMoved(t)
	})
	requestIDFlag(cmd, &requestID)
	return cmd
}

func (c *cli) actionsCommand() *cobra.Command {
	return c.group("actions", "settle what only a person can know", c.actionsSettle())
}

func (c *cli) actionsSettle() *cobra.Command {
	var state, reason, result string
	var evidence []string
	cmd := c.verb("settle TASK ACTION --state STATE --reason TEXT", "record the truth about an action whose outcome is unknown (operators), or that you said you execute", []string{"TASK", "ACTION"}, func(ctx context.Context, s *steward.Client, args []string) error {
		v, ok := stewardv1.SettleState_value["SETTLE_STATE_"+strings.ToUpper(state)]
		if !ok || v == 0 {
			return usagef("--state must be succeeded, failed or not_accepted, not %q", state)
		}
		req := &stewardv1.SettleActionRequest{TaskId: args[0], ActionId: args[1], State: stewardv1.SettleState(v), Reason: reason, Evidence: evidence}
		if result != "" {
			req.Result = &structpb.Value{}
			if err := protojson.Unmarshal([]byte(result), req.Result); err != nil {
				return usagef("--result is not JSON: %v", err)
			}
		}
		a, err := s.SettleAction(ctx, req)
		if err != nil {
			return fmt.Errorf("settle %s of task %s: %w", args[1], args[0], err)
		}
		if c.json() {
			return c.message(a)
		}
		_, err = fmt.Fprintf(c.stdout, "action %s is %s, settled by %s\n", a.ActionId, word(a.Status, "ACTION_STATUS_"), a.SettledBy)
		return err
	})
	cmd.Flags().StringVar(&state, "state", "", "what happened: succeeded, failed, or not_accepted (the tool has no record of it: it may be sent again)")
	cmd.Flags().StringVar(&reason, "reason", "", "how you know; required")
	cmd.Flags().StringVar(&result, "result", "", "with succeeded: the tool's result, as `JSON`")
	cmd.Flags().StringArrayVar(&evidence, "evidence", nil, "what shows it: a ticket, a URL, a document (`REF`; repeat for more); required to settle as succeeded an action you execute")
	return cmd
}

func (c *cli) budgetCommand() *cobra.Command {
	return c.group("budget", "raise a task's budget", c.budgetRaise())
}

func (c *cli) budgetRaise() *cobra.Command {
	var tokens, cost int64
	var reason, requestID, milestone string
	cmd := c.verb("raise TASK", "raise a task's budget (budget owners); a task suspended for its budget resumes once the raise covers what it spent", []string{"TASK"}, func(ctx context.Context, s *steward.Client, args []string) error {
		if tokens == 0 && cost == 0 {
			return usagef("give --tokens, --cost-micros or both: the new limits")
		}
		t, err := s.RaiseBudget(ctx, &stewardv1.RaiseBudgetRequest{TaskId: args[0], MaxTokens: tokens, MaxCostMicros: cost, Reason: reason, RequestId: requestID, MilestoneId: milestone})
		if err != nil {
			return fmt.Errorf("raise the budget of %s: %w", args[0], err)
		}
		if c.json() {
			return c.message(t)
		}
		_, err = fmt.Fprintf(c.stdout, "task %s is %s; spent %s\n", t.Contract.GetTaskId(), word(t.Status, "TASK_STATUS_"), budgetLine(t))
		return err
	})
	cmd.Flags().Int64Var(&tokens, "tokens", 0, "the new token limit, higher than the old (0: as it is)")
	cmd.Flags().Int64Var(&cost, "cost-micros", 0, "the new cost limit in millionths, higher than the old (0: as it is)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the task's record")
	cmd.Flags().StringVar(&milestone, "milestone", "", "raise this `MILESTONE`'s budget line instead of the task's")
	requestIDFlag(cmd, &requestID)
	return cmd
}

// requestIDFlag adds --request-id, which makes a command safe to run again.
func requestIDFlag(cmd *cobra.Command, id *string) {
	cmd.Flags().StringVar(id, "request-id", "", "`ID` that makes the command safe to run again: a repeat does nothing more (default: one chosen per run)")
}
