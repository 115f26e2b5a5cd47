package e2e_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// waitingForInput is a task whose agent asked which region, offering eu
// and us; nobody answers it.
func (e *harness) waitingForInput(t *testing.T) string {
	return fixture(e, "waiting for input", func() string {
		id := e.create(t, "table-asking", contract())
		if _, err := e.agent.tasks.RequestInput(context.Background(), connect.NewRequest(&stewardv1.RequestInputRequest{
			TaskId: id, Question: "Which region?", Choices: []string{"eu", "us"}})); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, e.agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT)
		return id
	})
}

// askingChecks are the rows about asking for help (docs/input.md).
func askingChecks() map[string]tableCheck {
	ctx := context.Background()
	return map[string]tableCheck{
		"`RequestInput` without a question, with a blank or repeated choice; by anyone but the agent the task belongs to; from a task that is not running": func(t *testing.T, e *harness) []error {
			ask := func(c authed, taskID, question string, choices ...string) func() error {
				return func() error {
					_, err := c.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{TaskId: taskID, Question: question, Choices: choices}))
					return err
				}
			}
			id := e.governed(t)
			errs := e.unchanged(t, id, ask(e.agent, id, ""), ask(e.agent, id, "Which?", "eu", " "), ask(e.agent, id, "Which?", "eu", "eu"), ask(e.viewer, id, "Which?"))
			paused := e.paused(t)
			return []error{
				alike(t, onField(t, errs[0], "question"), onField(t, errs[1], "choices[1]"), onField(t, errs[2], "choices[1]")),
				errs[3],
				saying(t, ask(e.agent, paused, "Which?")(), "paused"),
			}
		},
		"`ProvideInput` with an answer not among the question's choices; by anyone but the requester, the accountable owner or an `operator`; on a task not waiting for input": func(t *testing.T, e *harness) []error {
			answer := func(c authed, taskID, a string) func() error {
				return func() error {
					_, err := c.tasks.ProvideInput(ctx, connect.NewRequest(&stewardv1.ProvideInputRequest{TaskId: taskID, Answer: a}))
					return err
				}
			}
			id := e.waitingForInput(t)
			errs := e.unchanged(t, id, answer(e.operator, id, "asia"), answer(e.viewer, id, "eu"), answer(e.agent, id, "eu"))
			return []error{
				onField(t, errs[0], "answer"),
				alike(t, errs[1], errs[2]),
				answer(e.operator, e.governed(t), "eu")(),
			}
		},
		"`RequestInput`, or a `SubmitPlan` checkpoint step, with an `askRef` that is neither the contract's requester nor its accountable owner": func(t *testing.T, e *harness) []error {
			id := e.governed(t)
			// user:cy may view the task but not answer it: asking them
			// would leave the question to an operator alone.
			errs := e.unchanged(t, id,
				func() error {
					_, err := e.agent.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{TaskId: id, Question: "Which region?", AskRef: "user:cy"}))
					return err
				},
				func() error {
					_, err := e.agent.tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: id, Plan: &stewardv1.Plan{
						Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
							{Id: "ask", Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Publish?", AskRef: "user:cy"}}},
						}}}))
					return err
				},
			)
			return []error{alike(t, onField(t, errs[0], "ask_ref"), onField(t, errs[1], "plan.steps[0].checkpoint.ask_ref"))}
		},
		"`ProvideInput` by the requester or the accountable owner to a question that asks the other (`askRef`)": func(t *testing.T, e *harness) []error {
			k := contract()
			k.RequesterRef, k.AccountableOwnerRef = "user:rev", "user:owner"
			id := e.create(t, "table-asking-one", k)
			if _, err := e.agent.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{
				TaskId: id, Question: "Which region?", AskRef: "user:rev"})); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, e.agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT)
			return e.unchanged(t, id, func() error {
				_, err := e.owner.tasks.ProvideInput(ctx, connect.NewRequest(&stewardv1.ProvideInputRequest{TaskId: id, Answer: "eu"}))
				return saying(t, err, "its question is for user:rev")
			})
		},
	}
}
