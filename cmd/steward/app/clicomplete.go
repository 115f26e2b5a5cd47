package app

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/terminal"
	"github.com/steward-run/steward/sdk/go/steward"
)

// olderShort is what the older commands do, for completion's list.
var olderShort = map[string]string{
	"dev":          "run every plane and an embedded NATS JetStream in one process",
	"serve":        "run one plane against an external NATS JetStream",
	"gateway":      "one address for clients of the planes",
	"nats-users":   "write a NATS user per plane",
	"nats-streams": "raise Steward's streams and buckets to N replicas",
	"secret-key":   "write the key for secret tool parameters",
	"audit":        "replay, verify or export a task's history; record a finding",
	"archive":      "archive ended tasks, read or erase the archive",
	"receipt":      "print what happened to a task",
	"dead-letters": "list or replay the events the planes set aside",
	"version":      "print the version",
	"backup":       "snapshot every stream and bucket at a consistent cut",
	"restore":      "restore a backup before the planes start",
}

// completeIDs offers, for a positional argument named TASK, APPROVAL or
// TOOL, the ids Steward has: its tasks, the approvals that wait, or the
// tools it has. It asks
// once, briefly, where the command's flags and config say: a completion
// that cannot reach Steward offers nothing.
func (c *cli) completeIDs(names []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		none := cobra.ShellCompDirectiveNoFileComp
		if len(args) >= len(names) {
			return nil, none
		}
		if names[len(args)] == "FILE" {
			return nil, cobra.ShellCompDirectiveDefault
		}
		s, err := c.client(steward.Retry{Attempts: 1})
		if err != nil {
			return nil, none
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		defer cancel()
		var offered []cobra.Completion
		switch names[len(args)] {
		case "TASK":
			tasks, _ := listTasks(ctx, s, &stewardv1.ListTasksRequest{}, 1000)
			for _, t := range tasks {
				offered = append(offered, cobra.CompletionWithDesc(terminal.EscapeLine(t.Contract.GetTaskId()), terminal.EscapeLine(word(t.Status, "TASK_STATUS_")+": "+short(t.Contract.GetIntent(), 40))))
			}
		case "APPROVAL":
			page, _ := s.ListApprovals(ctx, &stewardv1.ListApprovalsRequest{PendingOnly: true})
			for _, ap := range page.GetApprovals() {
				offered = append(offered, cobra.CompletionWithDesc(terminal.EscapeLine(ap.ApprovalId), terminal.EscapeLine(approvalSubject(ap)+" "+ap.Target)))
			}
		case "TOOL":
			tools, _ := s.ListTools(ctx)
			for _, t := range tools {
				offered = append(offered, cobra.CompletionWithDesc(terminal.EscapeLine(t.Contract.GetName()), terminal.EscapeLine(short(t.Contract.GetDescription(), 40))))
			}
		}
		return offered, none
	}
}
