package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/sdk/go/steward"
)

// Goals that change mid-way (docs/revisions.md): 'tasks revise' proposes a
// new version of a task's contract; 'tasks revision approve|reject'
// decides the open one.

func (c *cli) tasksRevise() *cobra.Command {
	var intent, outcome, criteria, milestones, reason, requestID string
	cmd := c.verb("revise TASK --reason R [--intent I] [--outcome O] [--criteria FILE] [--milestones FILE]",
		"propose a new version of a task's contract; it takes effect once its accountable owner (and, where policy asks, a role) approves",
		[]string{"TASK"}, func(ctx context.Context, s *steward.Client, args []string) error {
			k := &stewardv1.TaskContract{Intent: intent, DesiredOutcome: outcome}
			if criteria != "" {
				if err := jsonFile("--criteria", criteria, &k.AcceptanceCriteria, func() *stewardv1.AcceptanceCriterion { return &stewardv1.AcceptanceCriterion{} }); err != nil {
					return err
				}
			}
			if milestones != "" {
				k.Budget = &stewardv1.Budget{}
				if err := jsonFile("--milestones", milestones, &k.Budget.Milestones, func() *stewardv1.MilestoneBudget { return &stewardv1.MilestoneBudget{} }); err != nil {
					return err
				}
			}
			resp, err := s.ReviseContract(ctx, &stewardv1.ReviseContractRequest{TaskId: args[0], Contract: k, Reason: reason, RequestId: requestID})
			if err != nil {
				return fmt.Errorf("revise %s: %w", args[0], err)
			}
			return c.revisionMoved(resp.Task, resp.Revision)
		})
	cmd.Flags().StringVar(&intent, "intent", "", "the revised intent")
	cmd.Flags().StringVar(&outcome, "outcome", "", "the revised desired outcome")
	cmd.Flags().StringVar(&criteria, "criteria", "", "a `FILE` holding the revised acceptance criteria, a JSON array, replacing the task's")
	cmd.Flags().StringVar(&milestones, "milestones", "", "a `FILE` holding the revised milestone budgets, a JSON array, replacing the task's")
	cmd.Flags().StringVar(&reason, "reason", "", "why the contract changes; required")
	requestIDFlag(cmd, &requestID)
	return cmd
}

func (c *cli) tasksRevision() *cobra.Command {
	decide := func(approve bool, use, short string) *cobra.Command {
		var comment, requestID string
		cmd := c.verb(use, short, []string{"TASK", "REVISION"}, func(ctx context.Context, s *steward.Client, args []string) error {
			resp, err := s.DecideContractRevision(ctx, &stewardv1.DecideContractRevisionRequest{TaskId: args[0], RevisionId: args[1], Approve: approve, Comment: comment, RequestId: requestID})
			if err != nil {
				return fmt.Errorf("decide revision %s of %s: %w", args[1], args[0], err)
			}
			return c.revisionMoved(resp.Task, resp.Revision)
		})
		cmd.Flags().StringVar(&comment, "comment", "", "why, for the record (required to reject)")
		requestIDFlag(cmd, &requestID)
		return cmd
	}
	return c.group("revision", "decide the open revision of a task's contract",
		decide(true, "approve TASK REVISION", "approve it: as the accountable owner, or as a holder of the role its policy asks for"),
		decide(false, "reject TASK REVISION --comment C", "reject it: the version in force stays"))
}

// revisionMoved says where revision r of t stands, or prints both as JSON.
func (c *cli) revisionMoved(t *stewardv1.Task, r *stewardv1.ContractRevision) error {
	if c.json() {
		return c.message(&stewardv1.ReviseContractResponse{Task: t, Revision: r})
	}
	state := word(r.GetState(), "CONTRACT_REVISION_STATE_")
	_, err := fmt.Fprintf(c.stdout, "revision %s (version %d) of task %s is %s%s; version %d in force\n",
		r.GetRevisionId(), r.GetVersion(), t.Contract.GetTaskId(), state, waitingFor(t, r), task.ContractVersion(t))
	return err
}

// contractLine is the task's contract version and open revision, for
// 'tasks show'; empty for a contract never revised and no revision open.
func contractLine(t *stewardv1.Task) string {
	var parts []string
	if t.ContractVersion > 0 {
		parts = append(parts, fmt.Sprintf("version %d (%s)", t.ContractVersion, short(t.ContractHash, 12)))
	}
	if r := task.OpenRevision(t); r != nil {
		parts = append(parts, fmt.Sprintf("revision %s (version %d) open%s", r.RevisionId, r.Version, waitingFor(t, r)))
	}
	return strings.Join(parts, "; ")
}

// waitingFor says, for an open revision, whose approval it waits for.
func waitingFor(t *stewardv1.Task, r *stewardv1.ContractRevision) string {
	if r.GetState() != stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_OPEN {
		if r.GetClosedReason() != "" {
			return " (" + r.GetClosedReason() + ")"
		}
		return ""
	}
	var owed []string
	if r.OwnerApprovedBy == "" {
		owed = append(owed, "its accountable owner "+t.Contract.GetAccountableOwnerRef())
	}
	switch {
	case r.Snapshot == nil:
		owed = append(owed, "policy")
	case task.RevisionNeedsRole(r) && r.PolicyApprovedBy == "":
		owed = append(owed, "a holder of "+strings.Join(r.Snapshot.RequiredApproverRoles, " or "))
	}
	return ": waiting for " + strings.Join(owed, " and ")
}

// jsonFile reads a JSON array of messages, as protojson spells them, from
// the file named by arg.
func jsonFile[M proto.Message](flag, arg string, out *[]M, newM func() M) error {
	data, err := os.ReadFile(arg)
	if err != nil {
		return usagef("%s: %v", flag, err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return usagef("%s: %s is not a JSON array: %v", flag, arg, err)
	}
	for i, raw := range items {
		m := newM()
		if err := protojson.Unmarshal(raw, m); err != nil {
			return usagef("%s: item %d of %s: %v", flag, i, arg, err)
		}
		*out = append(*out, m)
	}
	return nil
}
