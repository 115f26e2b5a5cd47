package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/terminal"
	"github.com/steward-run/steward/sdk/go/steward"
)

func (c *cli) approvalsCommand() *cobra.Command {
	return c.group("approvals", "see what waits for a decision, and decide",
		c.approvalsLs(), c.approvalsShow(),
		c.decide("approve", stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE),
		c.decide("reject", stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT),
		c.approvalsAmend())
}

func (c *cli) approvalsLs() *cobra.Command {
	var taskID string
	var all bool
	cmd := c.verb("ls", "list the approvals that wait for a decision, oldest first", nil, func(ctx context.Context, s *steward.Client, _ []string) error {
		req := &stewardv1.ListApprovalsRequest{TaskId: taskID, PendingOnly: !all}
		var aps []*stewardv1.Approval
		for {
			page, err := s.ListApprovals(ctx, req)
			if err != nil {
				return fmt.Errorf("list approvals: %w", err)
			}
			aps = append(aps, page.Approvals...)
			if req.PageToken = page.NextPageToken; req.PageToken == "" {
				break
			}
		}
		if c.json() {
			return messages(c, aps)
		}
		rows := make([][]string, 0, len(aps))
		for _, ap := range aps {
			rows = append(rows, []string{ap.ApprovalId, ap.TaskId, approvalSubject(ap), ap.Target, approvalState(ap), votes(ap), when(ap.RequestedAt)})
		}
		return c.table([]string{"APPROVAL", "TASK", "TOOL", "TARGET", "STATE", "VOTES", "REQUESTED"}, rows)
	})
	cmd.Flags().StringVar(&taskID, "task", "", "only this task's approvals")
	cmd.Flags().BoolVar(&all, "all", false, "decided and withdrawn approvals too")
	return cmd
}

// approvalSubject is what an approval decides: a tool call or a plan.
func approvalSubject(ap *stewardv1.Approval) string {
	if ap.PlanHash != "" {
		return "plan v" + strconv.FormatUint(uint64(ap.PlanVersion), 10)
	}
	return ap.Tool + "@" + ap.ToolVersion
}

func approvalState(ap *stewardv1.Approval) string {
	if ap.Withdrawn {
		return "withdrawn"
	}
	switch ap.Decision {
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE:
		return "approved"
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT:
		return "rejected"
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND:
		return "amended"
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES:
		return "approved, by a person"
	}
	return "pending"
}

// votes is how many approvals it has of how many it needs.
func votes(ap *stewardv1.Approval) string {
	n := 0
	for _, v := range ap.Votes {
		if task.Approves(v.Decision) {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, max(ap.RequiredApprovals, 1))
}

// hashOf is the hash a decision on ap binds to: its action's, or its
// plan version's.
func hashOf(ap *stewardv1.Approval) string {
	if ap.PlanHash != "" {
		return ap.PlanHash
	}
	return ap.ActionHash
}

func (c *cli) approvalsShow() *cobra.Command {
	return c.verb("show APPROVAL", "show what an action will do, why, and the hash to decide it by", []string{"APPROVAL"}, func(ctx context.Context, s *steward.Client, args []string) error {
		ap, err := s.GetApproval(ctx, args[0])
		if err != nil {
			return fmt.Errorf("approval %s: %w", args[0], err)
		}
		if c.json() {
			return c.message(ap)
		}
		r := ap.Rationale
		fields(c.stdout,
			"approval", ap.ApprovalId, "task", ap.TaskId, "action", ap.ActionId, "decides", approvalSubject(ap), "target", ap.Target,
			"effect", word(ap.EffectClass, "EFFECT_CLASS_"), "sensitivity", word(ap.DataSensitivity, "DATA_SENSITIVITY_"),
			"parameters", ap.ParametersJson, "impact", ap.ExpectedImpact, "proposer says", r.GetExpectedImpact(),
			"rollback plan", r.GetRollbackPlan(), "undone by", ap.Rollback, "evidence", strings.Join(r.GetEvidence(), "; "),
			"alternatives", strings.Join(r.GetAlternatives(), "; "), "policy", strings.Join(ap.PolicyReasons, "; "),
			"roles", strings.Join(ap.RequiredRoles, ", "), "requested", when(ap.RequestedAt)+" by "+ap.RequestedBy,
			"state", approvalState(ap), "votes", votes(ap), "hash", hashOf(ap),
			"amended as", ap.AmendedActionId, "amended to", ap.AmendedParamsJson)
		for _, v := range ap.Votes {
			fmt.Fprintf(c.stdout, "vote:        %s %s at %s %s\n", v.Principal, word(v.Decision, "APPROVAL_DECISION_"), when(v.DecidedAt), terminal.EscapeLine(v.Comment))
		}
		if approvalState(ap) == "pending" {
			fmt.Fprintf(c.stdout, "\nto decide:   steward approvals approve %s --hash %s [--by-person]\n             steward approvals reject %s --hash %s\n", ap.ApprovalId, hashOf(ap), ap.ApprovalId, hashOf(ap))
			if ap.PlanHash == "" {
				fmt.Fprintf(c.stdout, "             steward approvals amend %s --hash %s --params JSON\n", ap.ApprovalId, hashOf(ap))
			}
		}
		return nil
	})
}

// decide is approve or reject: a vote bound to the hash the person was
// shown, which Steward refuses for any other action. Approve takes
// --by-person: the person does the work, and no tool is called.
func (c *cli) decide(name string, decision stewardv1.ApprovalDecision) *cobra.Command {
	var hash, comment string
	var byPerson bool
	cmd := c.verb(name+" APPROVAL --hash HASH", name+" an action (or a plan), bound to the hash 'approvals show' showed you", []string{"APPROVAL"}, func(ctx context.Context, s *steward.Client, args []string) error {
		req := &stewardv1.DecideApprovalRequest{ApprovalId: args[0], Decision: decision, Comment: comment}
		if byPerson {
			req.Decision = stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES
		}
		return c.sendDecision(ctx, s, name, hash, req)
	})
	cmd.Flags().StringVar(&hash, "hash", "", "the action's (or plan's) `HASH`, as 'approvals show' showed it; required")
	cmd.Flags().StringVar(&comment, "comment", "", "why, for the record")
	if decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE {
		cmd.Flags().BoolVar(&byPerson, "by-person", false, "approve it to be done by you, not the tool: no permit is issued, and the action waits for you to settle it with 'steward actions settle --evidence'")
	}
	return cmd
}

// sendDecision sends req, bound to hash, as the decision name: read the
// approval first, so that a refusal for a hash that changed says so.
func (c *cli) sendDecision(ctx context.Context, s *steward.Client, name, hash string, req *stewardv1.DecideApprovalRequest) error {
	if hash == "" {
		return usagef("--hash is required: the hash 'steward approvals show %s' shows, so that only the action you saw is decided", req.ApprovalId)
	}
	ap, err := s.GetApproval(ctx, req.ApprovalId)
	if err != nil {
		return fmt.Errorf("approval %s: %w", req.ApprovalId, err)
	}
	if ap.PlanHash != "" {
		req.PlanHash = hash
	} else {
		req.ActionHash = hash
	}
	decided, err := s.DecideApproval(ctx, req)
	if err != nil {
		return fmt.Errorf("%s %s with hash %s: %w%s", name, req.ApprovalId, hash, err, staleHint(ap, hash, err))
	}
	if c.json() {
		return c.message(decided)
	}
	line := fmt.Sprintf("approval %s: %s, %s approvals", decided.ApprovalId, approvalState(decided), votes(decided))
	switch decided.Decision {
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND:
		line += "; the amended action is " + decided.AmendedActionId
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES:
		line += fmt.Sprintf("; when done: steward actions settle %s %s --state succeeded --reason TEXT --evidence REF", decided.TaskId, decided.ActionId)
	}
	_, err = fmt.Fprintln(c.stdout, line)
	return err
}

// staleHint says, when Steward refused a decision because what waits is
// not what the person saw, that the action changed since.
func staleHint(ap *stewardv1.Approval, hash string, err error) string {
	// ap was read before the decision was sent: a hash that differs, or
	// a withdrawn approval, is why it was refused.
	if code := steward.CodeOf(err); code != connect.CodeInvalidArgument && code != connect.CodeFailedPrecondition {
		return ""
	}
	if ap.Withdrawn || hashOf(ap) != hash {
		return fmt.Sprintf(" — nothing was decided: the action changed since you saw that hash; see 'steward approvals ls --task %s' and decide on what waits now", ap.TaskId)
	}
	return ""
}
