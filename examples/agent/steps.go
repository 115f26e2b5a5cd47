package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// openTask creates the run's task — or, on a restart, finds it: the
// request id is the run's name — and waits for it to run. It returns the
// task's status: one already produced or ended has nothing left to do.
func (a *agent) openTask(ctx context.Context) (stewardv1.TaskStatus, error) {
	t, err := a.steward.CreateTask(ctx, &stewardv1.CreateTaskRequest{RequestId: a.run, Contract: &stewardv1.TaskContract{
		Intent:              fmt.Sprintf("Sync %d files from the source store to the destination, and publish the manifest", a.files),
		DesiredOutcome:      "every file in the destination, and a manifest naming them",
		RequesterRef:        "user:ana",
		AccountableOwnerRef: "user:ana",
		RiskTier:            stewardv1.RiskTier_RISK_TIER_MEDIUM,
		Budget:              &stewardv1.Budget{MaxTokens: 100_000},
		AllowedTools:        []string{"sync_list", "sync_copy", "sync_publish", "sync_llm"},
		AcceptanceCriteria: []*stewardv1.AcceptanceCriterion{{Id: "manifest", Description: "the manifest names every file",
			Expression: fmt.Sprintf(`"manifest" in artifacts && artifacts["manifest"].json.files == %d`, a.files)}},
	}})
	if err != nil {
		return 0, fmt.Errorf("create the task: %w", err)
	}
	a.taskID = t.Contract.TaskId
	for t.Status == stewardv1.TaskStatus_TASK_STATUS_PENDING {
		select { // the control plane starts it at once
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if t, err = a.steward.GetTask(ctx, a.taskID); err != nil {
			return 0, err
		}
	}
	return t.Status, nil
}

// decided is the decisions already on the record: a restart recovers
// them, it does not ask the model again.
func (a *agent) decided(ctx context.Context) (map[string]bool, error) {
	decided := map[string]bool{}
	for page := ""; ; {
		resp, err := a.steward.ListDecisions(ctx, a.taskID, page)
		if err != nil {
			return nil, err
		}
		for _, d := range resp.Decisions {
			decided[d.DecisionId] = true
		}
		if page = resp.NextPageToken; page == "" {
			return decided, nil
		}
	}
}

// list reads the source's listing and puts it on the context ledger, for
// the decisions that follow to cite.
func (a *agent) list(ctx context.Context) error {
	act, err := a.do(ctx, "list", "sync_list", map[string]any{"store": "source"}, nil)
	if err != nil {
		return err
	}
	_, err = a.steward.AttachContext(ctx, &stewardv1.AttachContextRequest{TaskId: a.taskID, Item: &stewardv1.ContextItem{
		ContextId: "listing", Uri: "store://source", Digest: "sha256:" + act.GetOutcome().GetResultHash(), Source: "sync_list",
		Egress: []string{"toy"}}})
	return err
}

// syncFile asks the model whether to copy name (unless that decision is
// on the record), then copies it. Each proposal's id is fixed by the
// step, so a restart finds the action already made rather than make it
// again.
func (a *agent) syncFile(ctx context.Context, name string, decided map[string]bool) error {
	decision := "copy-" + name
	if !decided[decision] {
		params := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Copy " + name + " to the destination?"}},
			"decision_id": decision, "context_ids": []any{"listing"}, "prompt_template_id": "sync", "prompt_version": "v1", "code_version": "examples/agent@1"}
		// The model call's proposal id is the decision's: proposed again
		// after a restart, it answers with the call already made.
		if _, err := a.do(ctx, decision, "sync_llm", params, nil); err != nil {
			return err
		}
		fmt.Fprintf(a.out, "decided %s\n", decision)
	}
	if _, err := a.do(ctx, "put-"+name, "sync_copy", map[string]any{"file": name}, nil); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "copied %s\n", name)
	return nil
}

// do proposes a step's action under its proposal id and waits for it to
// succeed (Steward retries a transient failure under the tool's policy).
func (a *agent) do(ctx context.Context, proposal, tool string, params map[string]any, why *stewardv1.ActionRationale) (*stewardv1.Action, error) {
	ps, err := structpb.NewStruct(params)
	if err != nil {
		return nil, err
	}
	act, err := a.steward.ProposeAndWait(ctx, &stewardv1.ProposeActionRequest{TaskId: a.taskID, ProposalId: proposal, Tool: tool, Target: "store", Params: ps, Rationale: why})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", proposal, err)
	}
	if act.Status == stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
		if err := a.approve(ctx, act); err != nil {
			return nil, err
		}
		if act, err = a.steward.WaitAction(ctx, a.taskID, act.ActionId); err != nil {
			return nil, err
		}
	}
	if act.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		return nil, fmt.Errorf("%s: %s ended %s", proposal, tool, act.Status)
	}
	return act, nil
}

// publish publishes the manifest: irreversible, so a person approves it.
func (a *agent) publish(ctx context.Context) error {
	_, err := a.do(ctx, "publish", "sync_publish", map[string]any{"files": a.files}, &stewardv1.ActionRationale{
		ExpectedImpact: "the destination's readers see the manifest", RollbackPlan: "publish a correction: a manifest cannot be withdrawn",
		Evidence: []string{"listing"}})
	if err == nil {
		fmt.Fprintln(a.out, "published the manifest")
	}
	return err
}

// approve approves act as the approver, bound to the hash of the action
// they were shown. In a real deployment a person does this.
func (a *agent) approve(ctx context.Context, act *stewardv1.Action) error {
	list, err := a.approvals.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: a.taskID, PendingOnly: true}))
	if err != nil {
		return err
	}
	for _, ap := range list.Msg.Approvals {
		if ap.ActionId != act.ActionId {
			continue
		}
		_, err := a.approvals.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{ApprovalId: ap.ApprovalId, ActionHash: ap.ActionHash,
			Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, Comment: "the manifest is right"}))
		fmt.Fprintf(a.out, "approved %s\n", act.Tool)
		return err
	}
	return fmt.Errorf("no pending approval of %s", act.ActionId)
}

// handIn submits the manifest, says the work is done, and prints the
// receipt.
func (a *agent) handIn(ctx context.Context) error {
	manifest, _ := json.Marshal(map[string]any{"files": a.files})
	if _, err := a.steward.SubmitArtifact(ctx, &stewardv1.SubmitArtifactRequest{TaskId: a.taskID, Name: "manifest", MediaType: "application/json",
		Content: manifest, RequestId: a.run + "/manifest"}); err != nil {
		return err
	}
	// The request id is the run's: killed after this and run again, the
	// agent says it once more as the same command.
	resp, err := a.steward.MarkProduced(ctx, &stewardv1.MarkProducedRequest{TaskId: a.taskID, RequestId: a.run + "/produced"})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "task %s: %s\n", a.taskID, resp.Task.GetStatus())
	return a.printReceipt(ctx)
}

// printReceipt prints the task's receipt, for people.
func (a *agent) printReceipt(ctx context.Context) error {
	receipt, err := a.steward.GetReceipt(ctx, a.taskID)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.out, receipt.Markdown)
	return nil
}

// note and noted keep what the agent may lose: its working directory.
func (a *agent) note(name string) { _ = os.WriteFile(filepath.Join(a.dir, name), nil, 0o644) }

func (a *agent) noted(name string) bool {
	_, err := os.Stat(filepath.Join(a.dir, name))
	return err == nil
}

// crash kills the agent as a machine's loss would: no deferred call runs.
func crash() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
