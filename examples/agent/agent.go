package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/sdk/go/steward"
)

// agent works one run's task.
type agent struct {
	config
	out io.Writer
	// steward is the agent's own client; approvals and tools are the
	// approver's and the admin's, whom steward dev's token file names
	// too — in a real deployment, other people.
	steward   *steward.Client
	approvals stewardv1connect.GovernanceServiceClient
	tools     stewardv1connect.ToolServiceClient
	taskID    string
}

func newAgent(c config, out io.Writer) (*agent, error) {
	tokens, err := readTokens(c.tokens)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: time.Minute}
	as := func(principal string) connect.ClientOption {
		return connect.WithInterceptors(steward.Bearer(tokens[principal]))
	}
	return &agent{config: c, out: out,
		steward:   steward.New(c.steward, steward.WithToken(tokens["agent:dev"])),
		approvals: stewardv1connect.NewGovernanceServiceClient(hc, c.steward, as("user:approver")),
		tools:     stewardv1connect.NewToolServiceClient(hc, c.steward, as("user:admin")),
	}, nil
}

// work does the run's task from wherever it stands.
func (a *agent) work(ctx context.Context) error {
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return err
	}
	if err := a.registerTools(ctx); err != nil {
		return err
	}
	status, err := a.openTask(ctx)
	if err != nil {
		return err
	}
	switch status {
	case stewardv1.TaskStatus_TASK_STATUS_PRODUCED, stewardv1.TaskStatus_TASK_STATUS_ACCEPTED,
		stewardv1.TaskStatus_TASK_STATUS_FAILED, stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
		fmt.Fprintf(a.out, "task %s: %s already\n", a.taskID, status)
		return a.printReceipt(ctx)
	}
	decided, err := a.decided(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "task %s: %d decisions already on the record\n", a.taskID, len(decided))
	if err := a.list(ctx); err != nil {
		return err
	}
	for i := 1; i <= a.files; i++ {
		if err := a.syncFile(ctx, fileName(i), decided); err != nil {
			return err
		}
		if i == a.crashAfter && !a.noted("restarted") {
			a.note("restarted")
			fmt.Fprintf(a.out, "killed after %d files\n", i)
			crash()
		}
	}
	if err := a.publish(ctx); err != nil {
		return err
	}
	return a.handIn(ctx)
}

func fileName(i int) string { return fmt.Sprintf("file-%02d.txt", i) }

// registerTools registers the store's and the model's tools, as an
// an admin does once; registering the same contract again is a no-op.
func (a *agent) registerTools(ctx context.Context) error {
	quick := &stewardv1.RetryPolicy{MaxAttempts: 3, InitialBackoff: durationpb.New(100 * time.Millisecond), MaxBackoff: durationpb.New(time.Second)}
	http := func(name, path string, effect stewardv1.EffectClass) *stewardv1.ToolContract {
		return &stewardv1.ToolContract{Name: name, Version: "1", EffectClass: effect, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
			Timeout: durationpb.New(5 * time.Second), RetryPolicy: quick, Idempotency: &stewardv1.IdempotencySupport{HonoursKey: true}, StatusQuery: true,
			Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: a.store + path, StatusUrl: a.store + "/status"}}}
	}
	tools := []*stewardv1.ToolContract{
		http("sync_list", "/list", stewardv1.EffectClass_EFFECT_CLASS_READ),
		http("sync_copy", "/copy", stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE),
		http("sync_publish", "/publish", stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE),
		{Name: "sync_llm", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
			Timeout: durationpb.New(30 * time.Second),
			Endpoint: &stewardv1.ToolContract_Model{Model: &stewardv1.ModelEndpoint{BaseUrl: a.model, Model: "toy-1", Provider: "toy", MaxTokens: 200,
				InputMicrosPer_1K: 100, OutputMicrosPer_1K: 300}}},
	}
	for _, t := range tools {
		if _, err := a.tools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: t})); err != nil &&
			connect.CodeOf(err) != connect.CodeAlreadyExists {
			return fmt.Errorf("register %s: %w", t.Name, err)
		}
	}
	return nil
}

// readTokens reads steward dev's token file: principal → token.
func readTokens(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the tokens (--tokens): %w", err)
	}
	var f struct {
		Tokens []struct{ Principal, Token string }
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("--tokens %s: %w", path, err)
	}
	tokens := map[string]string{}
	for _, t := range f.Tokens {
		tokens[t.Principal] = t.Token
	}
	for _, p := range []string{"agent:dev", "user:approver", "user:admin"} {
		if tokens[p] == "" {
			return nil, fmt.Errorf("--tokens %s names no token of %s", path, p)
		}
	}
	return tokens, nil
}
