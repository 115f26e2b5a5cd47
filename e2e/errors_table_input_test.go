package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// inputChecks are the checks of the rows about request ids, ids and lists
// past their limits, durations, Steward-owned fields and tool contracts.
func inputChecks() map[string]tableCheck {
	ctx := context.Background()
	return map[string]tableCheck{
		"a request id reused by the same caller for another command, another body or another task (a `proposalId`: for another proposal on its task)": func(t *testing.T, e *harness) []error {
			e.create(t, "table-reused", contract())
			other := contract()
			other.Intent = "Something else entirely"
			_, otherBody := e.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "table-reused", Contract: other}))
			id := e.create(t, "table-reuse-target", governed())
			pausedFor := fmt.Sprintf("was first used for PauseTask on task %s", id)
			paused := e.create(t, "table-reuse-pause", contract())
			if err := e.propose(t, id, "table-step", "search", "", map[string]any{"q": "a"}, nil); err != nil {
				t.Fatal(err)
			}
			// Let the read run, so that its events are not taken for
			// appends of the refused calls.
			waitAction(t, e.agent.clients, id, e.actionOf(t, id, "table-step"), stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
			if _, err := e.agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: id, RequestId: "table-rid", Reason: "hold"})); err != nil {
				t.Fatal(err)
			}
			calls := e.unchanged(t, id,
				func() error { // another command
					_, err := e.agent.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: id, RequestId: "table-rid", Reason: "stop"}))
					return saying(t, err, pausedFor)
				},
				func() error { // another proposal under the same proposal id
					return e.propose(t, id, "table-step", "search", "", map[string]any{"q": "b"}, nil)
				},
			)
			_, anotherTask := e.agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: paused, RequestId: "table-rid", Reason: "hold"}))
			return []error{alike(t, otherBody, calls[0], calls[1], saying(t, anotherTask, pausedFor))}
		},
		"the same command again with the same request id and body": func(t *testing.T, e *harness) []error {
			id := e.create(t, "table-retried", contract())
			pause := func() *stewardv1.Task {
				resp, err := e.agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: id, RequestId: "table-retry", Reason: "hold"}))
				if err != nil {
					t.Fatalf("pause: %v", err)
				}
				return resp.Msg.Task
			}
			first := pause()
			if again := pause(); again.EventCount != first.EventCount || e.eventCount(t, id) != first.EventCount {
				t.Errorf("the retry appended: %d events, then %d", first.EventCount, e.eventCount(t, id))
			}
			return nil
		},
		"a command refused (bad input, a state that forbids it), then sent fixed under the same request id": func(t *testing.T, e *harness) []error {
			id := e.create(t, "table-fixed", contract())
			raise := func(tokens int64) error {
				_, err := e.funder.tasks.RaiseBudget(ctx, connect.NewRequest(&stewardv1.RaiseBudgetRequest{TaskId: id, RequestId: "table-raise", MaxTokens: tokens, Reason: "more"}))
				return err
			}
			if err := raise(10); connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("a raise that lowers the limit: %v, want invalid_argument", err)
			}
			if err := raise(100_000); err != nil {
				t.Errorf("the fixed raise under the same request id: %v", err)
			}
			return nil
		},
		"one request id from two callers": func(t *testing.T, e *harness) []error {
			mine := e.create(t, "table-demo-1", contract())
			resp, err := e.reviewer.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "table-demo-1", Contract: contract()}))
			switch {
			case err != nil:
				t.Errorf("the second caller's CreateTask: %v", err)
			case resp.Msg.Task.Contract.TaskId == mine || !resp.Msg.Created:
				t.Errorf("the second caller got task %s (created %v); want a new task, not %s", resp.Msg.Task.Contract.TaskId, resp.Msg.Created, mine)
			}
			return nil
		},
		"`RenewCredential` again with the same request id": func(t *testing.T, e *harness) []error {
			id := e.create(t, "table-renewed", contract())
			renew := func(reason string) (*stewardv1.RenewCredentialResponse, error) {
				resp, err := e.operator.governance.RenewCredential(ctx, connect.NewRequest(&stewardv1.RenewCredentialRequest{TaskId: id, Reason: reason, RequestId: "table-renew"}))
				if err != nil {
					return nil, err
				}
				return resp.Msg, nil
			}
			first, err := renew("the migration runs on")
			if err != nil {
				t.Fatal(err)
			}
			again, err := renew("the migration runs on")
			if err != nil || again.Credential.GetRenewals() != 1 || !again.Credential.GetCredential().GetExpiresAt().AsTime().Equal(first.Credential.GetCredential().GetExpiresAt().AsTime()) {
				t.Errorf("the retry: %v, %d renewals; want the first answer, one renewal", err, again.GetCredential().GetRenewals())
			}
			_, other := renew("another reason")
			return []error{other}
		},
		"an id past its limit, in any RPC": func(t *testing.T, e *harness) []error {
			huge := strings.Repeat("t", 1<<20-64)
			_, err := e.agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: huge}))
			if len(fmt.Sprint(err)) > 1024 {
				t.Errorf("a 1 MB id got a %d-byte answer", len(fmt.Sprint(err)))
			}
			_, long := e.agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: e.governed(t), RequestId: strings.Repeat("r", 129)}))
			return []error{alike(t, onField(t, err, "task_id"), onField(t, long, "request_id"))}
		},
		"a list or map of more than 256 entries, at any depth of any request": func(t *testing.T, e *harness) []error {
			statuses := make([]stewardv1.TaskStatus, 100_000)
			for i := range statuses {
				statuses[i] = stewardv1.TaskStatus_TASK_STATUS_RUNNING
			}
			_, many := e.agent.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{Statuses: statuses}))
			k := contract()
			k.Budget = &stewardv1.Budget{MaxTokens: 1_000_000}
			for i := range 257 {
				k.Budget.Milestones = append(k.Budget.Milestones, &stewardv1.MilestoneBudget{MilestoneId: fmt.Sprint("m", i), MaxTokens: 1})
			}
			_, deep := e.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "table-milestones", Contract: k}))
			return []error{alike(t, onField(t, many, "statuses"), onField(t, deep, "contract.budget.milestones"))}
		},
		"a value quoted back in an error": func(t *testing.T, e *harness) []error {
			_, err := e.agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{
				TaskId: e.governed(t), Name: "report", MediaType: "text/plain", Uri: strings.Repeat("u", 3000) + "\x1b[2J", Sha256: strings.Repeat("a", 64), SizeBytes: 1}))
			if msg := fmt.Sprint(err); !strings.Contains(msg, strings.Repeat("u", 64)) || strings.Contains(msg, strings.Repeat("u", 65)) || strings.Contains(msg, "\x1b") {
				t.Errorf("the uri came back as %q; want it cut after 64 bytes", err)
			}
			return nil
		},
		"a duration outside its range (see the limits below)": func(t *testing.T, e *harness) []error {
			tooShort, tooLong := contract(), contract()
			tooShort.Timers = &stewardv1.TaskTimers{StallAfter: durationpb.New(time.Nanosecond)}
			tooLong.Timers = &stewardv1.TaskTimers{ApprovalRemindAfter: &durationpb.Duration{Seconds: 10_000 * 365 * 24 * 3600}}
			_, short := e.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "table-1ns", Contract: tooShort}))
			_, long := e.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "table-10000y", Contract: tooLong}))
			return []error{alike(t, onField(t, short, "contract.timers.stall_after"), onField(t, long, "contract.timers.approval_remind_after"))}
		},
		"`contract.taskId` or `contract.credentialRef` set by the client, on `CreateTask` or `DelegateTask`": func(t *testing.T, e *harness) []error {
			withID, withRef := contract(), contract()
			withID.TaskId = "mine"
			withRef.CredentialRef = "cred-mine"
			_, errID := e.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "table-own-id", Contract: withID}))
			parent := e.governed(t)
			delegated := e.unchanged(t, parent, func() error {
				_, err := e.agent.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
					ParentTaskId: parent, Contract: withRef, DelegateRef: "agent:helper", RequestId: "table-own-ref"}))
				return err
			})
			return []error{alike(t, onField(t, errID, "contract.task_id"), onField(t, delegated[0], "contract.credential_ref"))}
		},
		"a tool contract without `effectClass` or `dataSensitivity`, or with an undefined one, at `RegisterTool` or in a `--tools` file": func(t *testing.T, e *harness) []error {
			register := func(change func(*stewardv1.ToolContract)) error {
				c := &stewardv1.ToolContract{Name: "table-tool", Version: "1.0.0", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
					DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC,
					Endpoint:        &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: "http://127.0.0.1:1/x"}}}
				change(c)
				_, err := e.tools().RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: c}))
				return err
			}
			noClass := register(func(c *stewardv1.ToolContract) { c.EffectClass = 0 })
			noSensitivity := register(func(c *stewardv1.ToolContract) { c.DataSensitivity = 0 })
			undefined := register(func(c *stewardv1.ToolContract) { c.DataSensitivity = 9 })

			file := writeFile(t, t.TempDir(), "tools.json", `{"tools": [{"name": "w", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "http": {"url": "http://127.0.0.1:1/w"}}]}`)
			exitsNaming(t, []string{"dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--tools", file}, filepath.Base(file), "w", "contract.data_sensitivity")
			return []error{alike(t, onField(t, noClass, "contract.effect_class"), onField(t, noSensitivity, "contract.data_sensitivity"),
				onField(t, undefined, "contract.data_sensitivity"))}
		},
		"a tool's `serviceKey` that is not 1–64 of `[A-Za-z0-9_-]`": func(t *testing.T, e *harness) []error {
			var out []error
			for _, key := range []string{">", "*", "a.b", strings.Repeat("k", 65)} {
				_, err := e.tools().RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: &stewardv1.ToolContract{
					Name: "table-keyed", Version: "1.0.0", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
					DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC, ServiceKey: key,
					Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: "http://127.0.0.1:1/x"}}}}))
				out = append(out, onField(t, err, "contract.service_key"))
			}
			return []error{alike(t, out...)}
		},
		"`RaiseBudget` with a negative limit": func(t *testing.T, e *harness) []error {
			k := contract()
			k.Budget = &stewardv1.Budget{MaxTokens: 100, MaxCostMicros: 100, Currency: "EUR"}
			id := e.create(t, "table-negative", k)
			raise := func(tokens, cost int64) error {
				_, err := e.funder.tasks.RaiseBudget(ctx, connect.NewRequest(&stewardv1.RaiseBudgetRequest{TaskId: id, MaxTokens: tokens, MaxCostMicros: cost, Reason: "more"}))
				return err
			}
			return e.unchanged(t, id, func() error {
				return alike(t, onField(t, raise(-1, 200), "max_tokens"), onField(t, raise(200, -1), "max_cost_micros"))
			})
		},
		"`--credential-ttl` outside 1 minute – 1 year": func(t *testing.T, e *harness) []error {
			for _, ttl := range []string{"1ns", "87600h"} {
				exitsNaming(t, []string{"dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--credential-ttl", ttl}, "--credential-ttl")
			}
			return nil
		},
	}
}

// tools is a tool registry client, as a tool-admin.
func (e *harness) tools() stewardv1connect.ToolServiceClient {
	return stewardv1connect.NewToolServiceClient(&http.Client{Timeout: 30 * time.Second}, e.url, connect.WithInterceptors(stewardtest.Bearer(toolAdminToken)))
}
