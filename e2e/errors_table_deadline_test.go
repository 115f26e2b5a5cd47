package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// deadlineChecks are the checks of the rows about deadlines
// (docs/deadline.md).
func deadlineChecks() map[string]tableCheck {
	ctx := context.Background()
	extend := func(c authed, taskID, reason string, deadline *timestamppb.Timestamp) error {
		_, err := c.tasks.ExtendDeadline(ctx, connect.NewRequest(&stewardv1.ExtendDeadlineRequest{TaskId: taskID, Reason: reason, Deadline: deadline}))
		return err
	}
	// owned is a task of user:owner's due in an hour.
	owned := func(t *testing.T, e *harness) (string, time.Time) {
		id := fixture(e, "deadline-owned", func() string {
			k := contract()
			k.AccountableOwnerRef = "user:owner"
			k.Deadline = timestamppb.New(time.Now().Add(time.Hour))
			return e.create(t, "table-deadline-owned", k)
		})
		return id, waitCredential(t, e.agent.clients, id).Credential.ExpiresAt.AsTime()
	}
	return map[string]tableCheck{
		"`ExtendDeadline` without a reason or a deadline; to a deadline not in the future or not later than the current one; a sub-task's past its parent's": func(t *testing.T, e *harness) []error {
			id, due := owned(t, e)
			// A sub-task of user:owner's own, due before its parent.
			sub := contract()
			sub.AccountableOwnerRef = "user:owner"
			sub.Budget = &stewardv1.Budget{MaxTokens: 10_000}
			sub.Deadline = timestamppb.New(due.Add(-time.Minute))
			resp, err := e.agent.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
				ParentTaskId: id, Contract: sub, DelegateRef: "agent:summariser", RequestId: "table-deadline-sub"}))
			if err != nil {
				t.Fatal(err)
			}
			child := resp.Msg.Task.Contract.TaskId
			later := timestamppb.New(due.Add(time.Hour))
			return []error{alike(t,
				onField(t, extend(e.owner, id, "", later), "reason"),
				onField(t, extend(e.owner, id, "more time", nil), "deadline"),
				onField(t, extend(e.owner, id, "more time", timestamppb.New(time.Now().Add(-time.Minute))), "deadline"),
				onField(t, extend(e.owner, id, "more time", timestamppb.New(due.Add(-time.Second))), "deadline"),
				saying(t, onField(t, extend(e.owner, child, "more time", later), "deadline"), "extend the parent's first"),
			)}
		},
		"`ExtendDeadline` by anyone but the contract's accountable owner": func(t *testing.T, e *harness) []error {
			id, due := owned(t, e)
			later := timestamppb.New(due.Add(time.Hour))
			err := alike(t, extend(e.agent, id, "more time", later), extend(e.approver, id, "more time", later), extend(e.operator, id, "more time", later))
			if tk := waitCredential(t, e.agent.clients, id); !tk.Credential.ExpiresAt.AsTime().Equal(due) {
				t.Errorf("the credential changed")
			}
			resp, gerr := e.agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: id}))
			if gerr != nil || !resp.Msg.Task.Contract.Deadline.AsTime().Equal(due) {
				t.Errorf("a refused extension moved the deadline: %v", gerr)
			}
			return []error{err}
		},
		"`ExtendDeadline` on a task without a deadline, or an ended one": func(t *testing.T, e *harness) []error {
			k := contract()
			k.AccountableOwnerRef = "user:owner"
			none := e.create(t, "table-deadline-none", k)
			k.Deadline = timestamppb.New(time.Now().Add(time.Hour))
			ended := e.create(t, "table-deadline-ended", k)
			if _, err := e.agent.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: ended, Reason: "done"})); err != nil {
				t.Fatal(err)
			}
			later := timestamppb.New(time.Now().Add(2 * time.Hour))
			return []error{alike(t, saying(t, extend(e.owner, none, "more time", later), "no deadline"), extend(e.owner, ended, "more time", later))}
		},
		"`ResumeTask` on a task suspended at a deadline that has still passed; a proposal while it is suspended": func(t *testing.T, e *harness) []error {
			parent, _ := e.pastDeadline(t)
			waitServed(t, e.agent.clients, parent, 15*time.Second, func(tk *stewardv1.Task) (bool, string) {
				return tk.SuspendedFor == stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE, fmt.Sprintf("%v (%s), want suspended at its deadline", tk.Status, tk.StatusReason)
			})
			_, resume := e.owner.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: parent, Reason: "go on"}))
			return []error{
				saying(t, resume, "ExtendDeadline"),
				e.propose(t, parent, "table-past-deadline", "search", "", map[string]any{"q": "late"}, nil),
			}
		},
	}
}
