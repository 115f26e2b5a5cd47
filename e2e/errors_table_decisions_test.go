package e2e_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// decisionChecks are the rows about the decision record
// (docs/decisions.md).
func decisionChecks() map[string]tableCheck {
	ctx := context.Background()
	return map[string]tableCheck{
		"`ForkTask` without a reason or a request id, at a sequence that is not one of the task's, or reserving more than the task has left; by anyone but the agent the task belongs to; of a task whose credential was revoked, or revoked above it": func(t *testing.T, e *harness) []error {
			id := e.governed(t)
			fork := func(c authed, req *stewardv1.ForkTaskRequest) func() error {
				return func() error {
					req.TaskId = id
					_, err := c.tasks.ForkTask(ctx, connect.NewRequest(req))
					return err
				}
			}
			errs := e.unchanged(t, id, fork(e.agent, &stewardv1.ForkTaskRequest{RequestId: "f1"}), fork(e.agent, &stewardv1.ForkTaskRequest{Reason: "again"}),
				fork(e.agent, &stewardv1.ForkTaskRequest{Reason: "again", RequestId: "f1", AtSequence: 1 << 40}),
				fork(e.agent, &stewardv1.ForkTaskRequest{Reason: "again", RequestId: "f1", MaxTokens: 1 << 40}),
				fork(e.viewer, &stewardv1.ForkTaskRequest{Reason: "again", RequestId: "f1", MaxTokens: 10}))
			revoked, _ := e.revoked(t)
			_, forkRevoked := e.agent.tasks.ForkTask(ctx, connect.NewRequest(&stewardv1.ForkTaskRequest{TaskId: revoked, Reason: "again", RequestId: "f-revoked"}))
			return []error{
				alike(t, onField(t, errs[0], "reason"), onField(t, errs[1], "request_id"), onField(t, errs[2], "at_sequence"), onField(t, errs[3], "max_tokens")),
				errs[4],
				saying(t, forkRevoked, "revoked"),
			}
		},
		"`RecordDecision` or `AttachContext` with a required field missing, a bound passed or a field only Steward sets; a decision citing a context item the task's ledger does not hold; by anyone but the agent the task belongs to; an id recorded before with another body": func(t *testing.T, e *harness) []error {
			id := e.governed(t)
			decision := func(c authed, d *stewardv1.Decision) func() error {
				return func() error {
					_, err := c.tasks.RecordDecision(ctx, connect.NewRequest(&stewardv1.RecordDecisionRequest{TaskId: id, Decision: d}))
					return err
				}
			}
			attach := func(c authed, item *stewardv1.ContextItem) func() error {
				return func() error {
					_, err := c.tasks.AttachContext(ctx, connect.NewRequest(&stewardv1.AttachContextRequest{TaskId: id, Item: item}))
					return err
				}
			}
			d := func(decisionID, model string, cites ...string) *stewardv1.Decision {
				return &stewardv1.Decision{DecisionId: decisionID, ContextIds: cites, Call: &stewardv1.ModelCall{Provider: "openai", ModelId: model},
					LedTo: &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}}}
			}
			long := d("table-d", "gpt-a")
			long.Rationale = strings.Repeat("r", 4097)
			observed := d("table-d", "gpt-a")
			observed.Call.Provenance = stewardv1.Provenance_PROVENANCE_OBSERVED
			errs := e.unchanged(t, id, decision(e.agent, d("table-d", "")), attach(e.agent, &stewardv1.ContextItem{ContextId: "c", Uri: "notes"}),
				decision(e.agent, observed), decision(e.agent, d("table-d", "gpt-a", "nope")), decision(e.agent, long), decision(e.viewer, d("table-d", "gpt-a")))
			if err := decision(e.agent, d("table-d", "gpt-a"))(); err != nil {
				t.Fatal(err)
			}
			return []error{
				alike(t, onField(t, errs[0], "decision.call.model_id"), onField(t, errs[1], "item.uri"),
					onField(t, errs[2], "decision.call.provenance"), onField(t, errs[3], "decision.context_ids[0]")),
				onField(t, errs[4], "decision.rationale"),
				errs[5],
				decision(e.agent, d("table-d", "gpt-b"))(),
			}
		},
	}
}
