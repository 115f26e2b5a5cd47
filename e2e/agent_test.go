package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// The scripted agent: this test binary again, run with STEWARD_E2E_AGENT
// set to Steward's address (TestAgentKilledMidRunAsksEachDecisionOnce).
// It works a task in steps, one model decision each, through the llm
// tool, keeping what it did in its working directory; started again with
// that directory gone, it reads its decisions back from Steward
// (ListDecisions) and asks the model only for those it lacks.
const (
	agentEnvURL   = "STEWARD_E2E_AGENT"
	agentEnvTask  = "STEWARD_E2E_AGENT_TASK"
	agentEnvDir   = "STEWARD_E2E_AGENT_DIR"
	agentEnvSteps = "STEWARD_E2E_AGENT_STEPS"
)

// runAgentFromEnv runs the scripted agent and exits, when this process
// was started as one.
func runAgentFromEnv() {
	url := os.Getenv(agentEnvURL)
	if url == "" {
		return
	}
	steps, _ := strconv.Atoi(os.Getenv(agentEnvSteps))
	err := runAgent(context.Background(), url, os.Getenv(agentEnvTask), os.Getenv(agentEnvDir), steps)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// agentVersions are what the agent reports of its prompt and code.
var agentVersions = map[string]any{"prompt_template_id": "step", "prompt_version": "v2", "code_version": "agent@1.0"}

func runAgent(ctx context.Context, url, taskID, dir string, steps int) error {
	opt := connect.WithInterceptors(stewardtest.Bearer(agentToken))
	hc := &http.Client{Timeout: time.Minute}
	tasks := stewardv1connect.NewTaskServiceClient(hc, url, opt)
	query := stewardv1connect.NewQueryServiceClient(hc, url, opt)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// What the agent decided before, by its own notes or, without them,
	// by the record: a restart recovers, it does not recompute.
	decided := map[string]bool{}
	list, err := query.ListDecisions(ctx, connect.NewRequest(&stewardv1.ListDecisionsRequest{TaskId: taskID, PageSize: 1000}))
	if err != nil {
		return err
	}
	for _, d := range list.Msg.Decisions {
		decided[d.DecisionId] = true
	}
	fmt.Printf("recovered %d decisions\n", len(decided))
	if _, err := tasks.AttachContext(ctx, connect.NewRequest(&stewardv1.AttachContextRequest{TaskId: taskID, Item: &stewardv1.ContextItem{
		ContextId: "brief", Uri: "https://wiki.example/brief", Digest: "sha256:b1", Source: "wiki", Egress: []string{"openai"}}})); err != nil {
		return err
	}
	// The plan it works to: a decision of its own, reported.
	if _, err := tasks.RecordDecision(ctx, connect.NewRequest(&stewardv1.RecordDecisionRequest{TaskId: taskID, Decision: &stewardv1.Decision{
		DecisionId: "plan", Call: &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-plan", TokensIn: 50, TokensOut: 20},
		Versions:  &stewardv1.VersionSnapshot{PromptTemplateId: "plan", PromptVersion: "v1", CodeVersion: "agent@1.0", PolicyRevision: "default"},
		Rationale: fmt.Sprintf("%d steps, one model call each", steps), LedTo: &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}},
	}})); err != nil {
		return err
	}
	for i := 1; i <= steps; i++ {
		id := fmt.Sprintf("step-%d", i)
		if decided[id] {
			continue
		}
		params := map[string]any{"messages": []any{map[string]any{"role": "user", "content": id}}, "decision_id": id, "context_ids": []any{"brief"}}
		for k, v := range agentVersions {
			params[k] = v
		}
		ps, err := structpb.NewStruct(params)
		if err != nil {
			return err
		}
		// The proposal id is the decision's: proposed again after a
		// restart, it answers with the call already made.
		resp, err := tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: id, Tool: "llm", Params: ps}))
		if err != nil {
			return err
		}
		if err := awaitSucceeded(ctx, query, taskID, resp.Msg.Action.ActionId); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		if err := os.WriteFile(filepath.Join(dir, id), []byte("done\n"), 0o644); err != nil {
			return err
		}
		fmt.Println("decided", id)
	}
	return nil
}

// awaitSucceeded waits for the action to succeed, and fails if it ends
// otherwise.
func awaitSucceeded(ctx context.Context, query stewardv1connect.QueryServiceClient, taskID, actionID string) error {
	for {
		got, err := query.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: taskID, ActionId: actionID, Wait: true}))
		if err != nil {
			return err
		}
		switch st := got.Msg.Action.Status; st {
		case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
			return nil
		case stewardv1.ActionStatus_ACTION_STATUS_FAILED, stewardv1.ActionStatus_ACTION_STATUS_DENIED,
			stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN:
			return fmt.Errorf("ended %s", st)
		}
	}
}
