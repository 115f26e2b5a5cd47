package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/sdk/go/steward"
)

func (c *cli) tasksCommand() *cobra.Command {
	return c.group("tasks", "see and steer tasks",
		c.tasksLs(), c.tasksShow(), c.tasksWatch(), c.tasksTree(),
		c.steer("pause", "hold a task: nothing new is dispatched until it is resumed", c.pause),
		c.steer("resume", "let a paused, suspended or waiting task go on", c.resume),
		c.steer("cancel", "end a task as cancelled", c.cancel),
		c.steer("fail", "end a task as failed (--compensate undoes its reversible writes first)", c.fail),
		c.tasksAccept(), c.tasksReturn(), c.tasksProgress(), c.tasksRevise(), c.tasksRevision())
}

func (c *cli) tasksLs() *cobra.Command {
	var statuses, risks []string
	var limit int
	req := &stewardv1.ListTasksRequest{}
	cmd := c.verb("ls", "list tasks, oldest first", nil, func(ctx context.Context, s *steward.Client, _ []string) error {
		for _, st := range statuses {
			v, ok := stewardv1.TaskStatus_value["TASK_STATUS_"+strings.ToUpper(st)]
			if !ok || v == 0 {
				return usagef("--status %q is not a task status (running, paused, waiting_for_input, …)", st)
			}
			req.Statuses = append(req.Statuses, stewardv1.TaskStatus(v))
		}
		for _, r := range risks {
			v, ok := stewardv1.RiskTier_value["RISK_TIER_"+strings.ToUpper(r)]
			if !ok || v == 0 {
				return usagef("--risk %q is not a risk tier (low, medium, high, critical)", r)
			}
			req.RiskTiers = append(req.RiskTiers, stewardv1.RiskTier(v))
		}
		tasks, err := listTasks(ctx, s, req, limit)
		if err != nil {
			return err
		}
		return c.taskRows(tasks)
	})
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only tasks in these `STATUSES` (running,paused,…)")
	cmd.Flags().StringVar(&req.Owner, "owner", "", "only tasks whose accountable owner is `REF` (user:ann)")
	cmd.Flags().StringSliceVar(&risks, "risk", nil, "only tasks of these risk `TIERS` (low,medium,high,critical)")
	cmd.Flags().StringVar(&req.Tool, "tool", "", "only tasks that may call or have called `TOOL`")
	cmd.Flags().StringVar(&req.Text, "text", "", "only tasks whose intent, outcome or id contain `TEXT`, ignoring case")
	cmd.Flags().IntVar(&limit, "limit", 1000, "at most `N` tasks (0: all)")
	return cmd
}

// listTasks reads the pages of ListTasks until limit tasks (0: all).
func listTasks(ctx context.Context, s *steward.Client, req *stewardv1.ListTasksRequest, limit int) ([]*stewardv1.Task, error) {
	var all []*stewardv1.Task
	for {
		page, err := s.ListTasks(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		all = append(all, page.Tasks...)
		if limit > 0 && len(all) >= limit {
			return all[:limit], nil
		}
		if page.NextPageToken == "" {
			return all, nil
		}
		req.PageToken = page.NextPageToken
	}
}

func (c *cli) taskRows(tasks []*stewardv1.Task) error {
	if c.json() {
		return messages(c, tasks)
	}
	rows := make([][]string, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, []string{t.Contract.GetTaskId(), word(t.Status, "TASK_STATUS_"), when(t.UpdatedAt), short(t.Contract.GetIntent(), 60)})
	}
	return c.table([]string{"TASK", "STATUS", "UPDATED", "INTENT"}, rows)
}

func (c *cli) tasksShow() *cobra.Command {
	return c.verb("show TASK", "show a task: its status, budget, question and actions", []string{"TASK"}, func(ctx context.Context, s *steward.Client, args []string) error {
		t, err := s.GetTask(ctx, args[0])
		if err != nil {
			return fmt.Errorf("task %s: %w", args[0], err)
		}
		if c.json() {
			return c.message(t)
		}
		k := t.Contract
		fields(c.stdout,
			"task", k.GetTaskId(), "intent", k.GetIntent(), "status", word(t.Status, "TASK_STATUS_"), "why", t.StatusReason,
			"created", when(t.CreatedAt)+" by "+t.CreatedBy, "updated", when(t.UpdatedAt),
			"requester", k.GetRequesterRef(), "owner", k.GetAccountableOwnerRef(), "risk", word(k.GetRiskTier(), "RISK_TIER_"),
			"budget", budgetLine(t), "milestone", currentMilestone(t), "acceptance", acceptanceLine(t), "contract", contractLine(t), "fallback", fallbackLine(t), "question", t.OpenInput.GetQuestion(), "choices", strings.Join(t.OpenInput.GetChoices(), " | "),
			"events", strconv.FormatUint(uint64(t.EventCount), 10))
		if len(t.Milestones) > 0 {
			fmt.Fprintln(c.stdout)
			if err := c.milestoneTable(t); err != nil {
				return err
			}
		}
		if len(t.Actions) == 0 {
			return nil
		}
		fmt.Fprintln(c.stdout)
		rows := make([][]string, 0, len(t.Actions))
		for _, a := range t.Actions {
			rows = append(rows, []string{a.ActionId, toolCell(a), a.Target, word(a.Status, "ACTION_STATUS_"), a.Approval.GetApprovalId()})
		}
		return c.table([]string{"ACTION", "TOOL", "TARGET", "STATUS", "APPROVAL"}, rows)
	})
}

// budgetLine is what a task has spent of its budget.
func budgetLine(t *stewardv1.Task) string {
	b, used := t.Contract.GetBudget(), t.BudgetUsed
	var parts []string
	if b.GetMaxTokens() > 0 || used.GetTokens() > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d tokens", used.GetTokens(), b.GetMaxTokens()))
	}
	if b.GetMaxCostMicros() > 0 || used.GetCostMicros() > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d cost micros", used.GetCostMicros(), b.GetMaxCostMicros()))
	}
	return strings.Join(parts, ", ")
}

func (c *cli) tasksWatch() *cobra.Command {
	var after uint64
	cmd := c.verb("watch TASK", "follow a task's events live, until it ends (its history first)", []string{"TASK"}, func(ctx context.Context, _ *steward.Client, args []string) error {
		s, err := c.client(watching)
		if err != nil {
			return err
		}
		// A task that has ended shows no more events: from past its
		// last one there is nothing to follow.
		if after > 0 {
			t, err := s.GetTask(ctx, args[0])
			if err != nil {
				return fmt.Errorf("watch %s: %w", args[0], err)
			}
			if task.Terminal(t.Status) && after >= t.LastSequence {
				return nil
			}
		}
		ctx, stop := interruptible(context.WithoutCancel(ctx))
		defer stop()
		if !c.json() {
			fmt.Fprintf(c.stdout, "%-6s %-19s %-28s %s\n", "SEQ", "TIME", "EVENT", "BY")
		}
		err = s.Watch(ctx, args[0], after, func(rec *stewardv1.EventRecord) error {
			if err := c.eventLine(rec); err != nil {
				return err
			}
			if task.Ends(rec.Event) {
				return steward.ErrStopWatching
			}
			return nil
		})
		if errors.Is(err, context.Canceled) {
			return nil // stopped by the person watching
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", args[0], err)
		}
		return nil
	})
	cmd.Flags().Uint64Var(&after, "after", 0, "only events after stream sequence `N` (0: the task's whole history)")
	return cmd
}

func (c *cli) eventLine(rec *stewardv1.EventRecord) error {
	if c.json() {
		return c.message(rec)
	}
	ev := rec.Event
	_, err := fmt.Fprintf(c.stdout, "%-6d %-19s %-28s %s\n", rec.Sequence, when(ev.GetTime()), ev.GetType(), ev.GetActor().GetPrincipal())
	return err
}

// steerFlags are a steering command's flags.
type steerFlags struct {
	reason, requestID string
	compensate        bool
}

// steer is a command that moves a task: pause, resume, cancel, fail.
func (c *cli) steer(name, short string, send func(context.Context, *steward.Client, string, steerFlags) (*stewardv1.Task, error)) *cobra.Command {
	var f steerFlags
	cmd := c.verb(name+" TASK", short, []string{"TASK"}, func(ctx context.Context, s *steward.Client, args []string) error {
		t, err := send(ctx, s, args[0], f)
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, args[0], err)
		}
		return c.taskMoved(t)
	})
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, for the task's record")
	requestIDFlag(cmd, &f.requestID)
	if name == "fail" {
		cmd.Flags().BoolVar(&f.compensate, "compensate", false, "undo the task's succeeded reversible writes first")
	}
	return cmd
}

func (c *cli) pause(ctx context.Context, s *steward.Client, id string, f steerFlags) (*stewardv1.Task, error) {
	return s.PauseTask(ctx, &stewardv1.PauseTaskRequest{TaskId: id, Reason: f.reason, RequestId: f.requestID})
}

func (c *cli) resume(ctx context.Context, s *steward.Client, id string, f steerFlags) (*stewardv1.Task, error) {
	return s.ResumeTask(ctx, &stewardv1.ResumeTaskRequest{TaskId: id, Reason: f.reason, RequestId: f.requestID})
}

func (c *cli) cancel(ctx context.Context, s *steward.Client, id string, f steerFlags) (*stewardv1.Task, error) {
	return s.CancelTask(ctx, &stewardv1.CancelTaskRequest{TaskId: id, Reason: f.reason, RequestId: f.requestID})
}

func (c *cli) fail(ctx context.Context, s *steward.Client, id string, f steerFlags) (*stewardv1.Task, error) {
	return s.FailTask(ctx, &stewardv1.FailTaskRequest{TaskId: id, Reason: f.reason, RequestId: f.requestID, Compensate: f.compensate})
}

// taskMoved prints the task a command answered with.
func (c *cli) taskMoved(t *stewardv1.Task) error {
	if c.json() {
		return c.message(t)
	}
	_, err := fmt.Fprintf(c.stdout, "task %s is %s\n", t.Contract.GetTaskId(), word(t.Status, "TASK_STATUS_"))
	return err
}
