package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

func (c *cli) objectivesCommand() *cobra.Command {
	return c.group("objectives", "set, see and close objectives: outcomes that tasks work towards",
		c.objectivesCreate(), c.objectivesGet(), c.objectivesLs(), c.objectivesClose())
}

func (c *cli) objectivesCreate() *cobra.Command {
	req := &stewardv1.CreateObjectiveRequest{Budget: &stewardv1.ObjectiveBudget{}}
	cmd := c.verb("create INTENT", "set an objective; its id is printed (-o json: the objective)", []string{"INTENT"}, func(ctx context.Context, s *steward.Client, args []string) error {
		req.Intent = args[0]
		o, err := s.CreateObjective(ctx, req)
		if err != nil {
			return fmt.Errorf("create objective: %w", err)
		}
		if c.json() {
			return c.message(o)
		}
		_, err = fmt.Fprintln(c.stdout, o.ObjectiveId)
		return err
	})
	cmd.Flags().StringVar(&req.RequestId, "request-id", "", "make the call safe to repeat under `ID`: the same objective again")
	cmd.Flags().StringVar(&req.OwnerRef, "owner", "", "who answers for it, `REF` (default: you)")
	cmd.Flags().StringVar(&req.DesiredOutcome, "outcome", "", "the desired `OUTCOME`, in words")
	cmd.Flags().Int64Var(&req.Budget.MaxTokens, "max-tokens", 0, "what its tasks may spend together, in `TOKENS` (0: no limit)")
	cmd.Flags().Int64Var(&req.Budget.MaxCostMicros, "max-cost-micros", 0, "what its tasks may spend together, in cost `MICROS` (0: no limit)")
	cmd.Flags().StringVar(&req.Budget.Currency, "currency", "", "the ISO 4217 `CODE` of the cost limit")
	return cmd
}

func (c *cli) objectivesGet() *cobra.Command {
	return c.verb("get OBJECTIVE", "show an objective, its tasks taken together and its tasks", []string{"OBJECTIVE"}, func(ctx context.Context, s *steward.Client, args []string) error {
		req := &stewardv1.GetObjectiveRequest{ObjectiveId: args[0]}
		resp, err := s.GetObjective(ctx, req)
		if err != nil {
			return fmt.Errorf("objective %s: %w", args[0], err)
		}
		tasks := resp.Tasks
		for resp.NextPageToken != "" {
			req.PageToken = resp.NextPageToken
			if resp, err = s.GetObjective(ctx, req); err != nil {
				return fmt.Errorf("objective %s: %w", args[0], err)
			}
			tasks = append(tasks, resp.Tasks...)
		}
		if c.json() {
			return c.message(&stewardv1.GetObjectiveResponse{Objective: resp.Objective, Progress: resp.Progress, Tasks: tasks})
		}
		o, p := resp.Objective, resp.Progress
		fields(c.stdout,
			"objective", o.ObjectiveId, "intent", o.Intent, "outcome", o.DesiredOutcome, "status", word(o.Status, "OBJECTIVE_STATUS_"),
			"why", o.CloseReason, "owner", o.OwnerRef, "created", when(o.CreatedAt)+" by "+o.CreatedBy,
			"budget", objectiveBudgetLine(o), "tasks", progressLine(p),
			"spent", fmt.Sprintf("%d tokens, %d cost micros", p.GetSpentTokens(), p.GetSpentCostMicros()),
			"accepted", strconv.FormatUint(uint64(p.GetAccepted()), 10))
		if len(tasks) == 0 {
			return nil
		}
		fmt.Fprintln(c.stdout)
		return c.taskRows(tasks)
	})
}

// objectiveBudgetLine is what an objective's tasks reserved of its budget.
func objectiveBudgetLine(o *stewardv1.Objective) string {
	b := o.Budget
	parts := []string{fmt.Sprintf("%d of %d tokens reserved", o.ReservedTokens, b.GetMaxTokens())}
	if b.GetMaxCostMicros() > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d %s micros reserved", o.ReservedCostMicros, b.GetMaxCostMicros(), b.GetCurrency()))
	}
	return strings.Join(parts, ", ")
}

// progressLine is how many tasks an objective has, by status.
func progressLine(p *stewardv1.ObjectiveProgress) string {
	parts := []string{strconv.FormatUint(uint64(p.GetTasks()), 10)}
	for _, s := range p.GetStatuses() {
		parts = append(parts, fmt.Sprintf("%s %d", word(s.Status, "TASK_STATUS_"), s.Count))
	}
	return strings.Join(parts, ", ")
}

func (c *cli) objectivesLs() *cobra.Command {
	var statuses []string
	cmd := c.verb("ls", "list objectives, oldest first", nil, func(ctx context.Context, s *steward.Client, _ []string) error {
		req := &stewardv1.ListObjectivesRequest{}
		for _, st := range statuses {
			v, ok := stewardv1.ObjectiveStatus_value["OBJECTIVE_STATUS_"+strings.ToUpper(st)]
			if !ok || v == 0 {
				return usagef("--status %q is not an objective status (open, done, abandoned)", st)
			}
			req.Statuses = append(req.Statuses, stewardv1.ObjectiveStatus(v))
		}
		var all []*stewardv1.Objective
		for {
			page, err := s.ListObjectives(ctx, req)
			if err != nil {
				return fmt.Errorf("list objectives: %w", err)
			}
			all = append(all, page.Objectives...)
			if req.PageToken = page.NextPageToken; req.PageToken == "" {
				break
			}
		}
		if c.json() {
			return messages(c, all)
		}
		rows := make([][]string, 0, len(all))
		for _, o := range all {
			rows = append(rows, []string{o.ObjectiveId, word(o.Status, "OBJECTIVE_STATUS_"), o.OwnerRef, strconv.FormatUint(uint64(o.TasksAdded), 10), short(o.Intent, 60)})
		}
		return c.table([]string{"OBJECTIVE", "STATUS", "OWNER", "TASKS", "INTENT"}, rows)
	})
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only objectives in these `STATUSES` (open,done,abandoned)")
	return cmd
}

func (c *cli) objectivesClose() *cobra.Command {
	var abandoned bool
	var reason string
	cmd := c.verb("close OBJECTIVE", "close an objective as done (--abandoned: as abandoned), with a --reason", []string{"OBJECTIVE"}, func(ctx context.Context, s *steward.Client, args []string) error {
		req := &stewardv1.CloseObjectiveRequest{ObjectiveId: args[0], Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE, Reason: reason}
		if abandoned {
			req.Status = stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_ABANDONED
		}
		o, err := s.CloseObjective(ctx, req)
		if err != nil {
			return fmt.Errorf("close objective %s: %w", args[0], err)
		}
		if c.json() {
			return c.message(o)
		}
		_, err = fmt.Fprintf(c.stdout, "%s %s\n", o.ObjectiveId, word(o.Status, "OBJECTIVE_STATUS_"))
		return err
	})
	cmd.Flags().BoolVar(&abandoned, "abandoned", false, "close it as abandoned, not done")
	cmd.Flags().StringVar(&reason, "reason", "", "why, in `WORDS` (required)")
	return cmd
}

func (c *cli) tasksTree() *cobra.Command {
	req := &stewardv1.GetTaskTreeRequest{}
	cmd := c.verb("tree TASK", "show a task with its sub-tasks: status, spend, the subtree's spend, milestone", []string{"TASK"}, func(ctx context.Context, s *steward.Client, args []string) error {
		req.TaskId = args[0]
		root, err := s.GetTaskTree(ctx, req)
		if err != nil {
			return fmt.Errorf("task tree %s: %w", args[0], err)
		}
		if c.json() {
			return c.message(root)
		}
		var rows [][]string
		treeRows(root, "", &rows)
		return c.table([]string{"TASK", "STATUS", "MILESTONE", "TOKENS", "SUBTREE TOKENS", "SUBTREE COST", "INTENT"}, rows)
	})
	cmd.Flags().Uint32Var(&req.MaxDepth, "depth", 0, "`LEVELS` of sub-tasks (0: 3, at most 16)")
	cmd.Flags().Uint32Var(&req.MaxChildren, "children", 0, "sub-tasks listed per task, `N` (0: 50, at most 200)")
	cmd.Flags().StringVar(&req.PageToken, "page-token", "", "go on from a task's `TOKEN` for more of its sub-tasks (with that task's id)")
	return cmd
}

// treeRows adds n and the nodes below it, indented by depth, and a line
// for the sub-tasks not shown.
func treeRows(n *stewardv1.TaskTreeNode, indent string, rows *[][]string) {
	*rows = append(*rows, []string{indent + n.TaskId, word(n.Status, "TASK_STATUS_"), n.MilestoneId,
		strconv.FormatInt(n.Tokens, 10), strconv.FormatInt(n.SubtreeTokens, 10), strconv.FormatInt(n.SubtreeCostMicros, 10), short(n.Intent, 40)})
	for _, k := range n.Children {
		treeRows(k, indent+"  ", rows)
	}
	if n.ChildrenPageToken != "" {
		*rows = append(*rows, []string{indent + "  …", "more of " + n.TaskId + "'s: --page-token " + n.ChildrenPageToken, "", "", "", "", ""})
	}
}
