package control_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/control"
)

// requestCase is one command that takes a request id: how to make a task
// it applies to, and how to send it with one of two bodies.
type requestCase struct {
	command string
	// principal sends the command, and the other command after it.
	principal string
	// setup returns a fresh task the command applies to, named name.
	setup func(t *testing.T, r *harness, name string) string
	// send sends the command on taskID with body 0 or 1 and returns its
	// answer.
	send func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error)
	// same tells whether a repeat's answer is the first one; nil is
	// proto.Equal.
	same func(first, again proto.Message) bool
	// onTask is false when the command makes its own task (CreateTask),
	// so there is no other task to send it on.
	onTask bool
	// perTask is set for ids scoped to their task (proposal ids): on
	// another task, or as another command's request id, the same id is
	// another id.
	perTask bool
}

func requestCases() []requestCase {
	running := func(edit func(*stewardv1.TaskContract)) func(t *testing.T, r *harness, name string) string {
		return func(t *testing.T, r *harness, name string) string { return r.acceptanceTask(t, name, edit) }
	}
	reasons := []string{"first reason", "second reason"}
	task := func(tk *stewardv1.Task, err error) (proto.Message, error) { return tk, err }
	sameTask := func(first, again proto.Message) bool {
		return first.(*stewardv1.Task).GetContract().GetTaskId() == again.(*stewardv1.Task).GetContract().GetTaskId()
	}
	return []requestCase{
		{
			command: "CreateTask", principal: "user:ana",
			send: func(ctx context.Context, r *harness, _, requestID string, body int) (proto.Message, error) {
				req := validRequest(requestID)
				req.Contract.Intent = reasons[body]
				tk, _, err := r.ctl.CreateTask(ctx, "user:ana", req)
				return tk, err
			},
			same: sameTask,
		},
		{
			command: "PauseTask", principal: "user:ana", onTask: true, setup: running(nil),
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				return task(r.ctl.PauseTask(ctx, rpc.Identity{Principal: "user:ana"}, &stewardv1.PauseTaskRequest{TaskId: taskID, RequestId: requestID, Reason: reasons[body]}))
			},
		},
		{
			command: "ResumeTask", principal: "user:ana", onTask: true,
			setup: func(t *testing.T, r *harness, name string) string {
				id := r.acceptanceTask(t, name, nil)
				if _, err := r.ctl.PauseTask(context.Background(), rpc.Identity{Principal: "user:ana"}, &stewardv1.PauseTaskRequest{TaskId: id}); err != nil {
					t.Fatal(err)
				}
				return id
			},
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				return task(r.ctl.ResumeTask(ctx, rpc.Identity{Principal: "user:ana"}, &stewardv1.ResumeTaskRequest{TaskId: taskID, RequestId: requestID, Reason: reasons[body]}))
			},
		},
		{
			command: "CancelTask", principal: "user:ana", onTask: true, setup: running(nil),
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				return task(r.ctl.CancelTask(ctx, "user:ana", &stewardv1.CancelTaskRequest{TaskId: taskID, RequestId: requestID, Reason: reasons[body]}))
			},
		},
		{
			command: "FailTask", principal: "user:ana", onTask: true, setup: running(nil),
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				return task(r.ctl.FailTask(ctx, "user:ana", &stewardv1.FailTaskRequest{TaskId: taskID, RequestId: requestID, Reason: reasons[body]}))
			},
		},
		{
			command: "ReportUsage", principal: "agent", onTask: true, setup: running(nil),
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				return task(r.ctl.ReportUsage(ctx, "agent", &stewardv1.ReportUsageRequest{TaskId: taskID, RequestId: requestID, Tokens: int64(10 + body)}))
			},
		},
		{
			command: "RaiseBudget", principal: "user:ana", onTask: true,
			setup: running(func(c *stewardv1.TaskContract) { c.Budget = &stewardv1.Budget{MaxTokens: 1000} }),
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				return task(r.ctl.RaiseBudget(ctx, "user:ana", &stewardv1.RaiseBudgetRequest{TaskId: taskID, RequestId: requestID, MaxTokens: int64(2000 + body), Reason: "more"}))
			},
		},
		{
			command: "ProposeAction", principal: "agent", onTask: true, perTask: true, setup: running(nil),
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				params, err := structpb.NewStruct(map[string]any{"q": reasons[body]})
				if err != nil {
					return nil, err
				}
				a, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: requestID, Tool: "search", Params: params})
				return a, err
			},
		},
		{
			command: "SubmitArtifact", principal: "agent", onTask: true, setup: running(nil),
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				a, _, err := r.ctl.SubmitArtifact(ctx, "agent", &stewardv1.SubmitArtifactRequest{
					TaskId: taskID, RequestId: requestID, Name: "report", MediaType: "text/plain", Content: []byte(reasons[body])})
				return a, err
			},
		},
		{
			// MarkProduced has no body but its task: body 1 is the same.
			command: "MarkProduced", principal: "agent", onTask: true,
			setup: running(func(c *stewardv1.TaskContract) { c.AcceptanceOwnerRef = owner }),
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				_, round, err := r.ctl.MarkProduced(ctx, "agent", &stewardv1.MarkProducedRequest{TaskId: taskID, RequestId: requestID})
				return round, err
			},
		},
		{
			command: "AcceptTask", principal: owner, onTask: true, setup: produced,
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				return task(r.ctl.AcceptTask(ctx, owner, &stewardv1.AcceptTaskRequest{TaskId: taskID, RequestId: requestID, Reason: reasons[body]}))
			},
		},
		{
			command: "ReturnTask", principal: owner, onTask: true, setup: produced,
			send: func(ctx context.Context, r *harness, taskID, requestID string, body int) (proto.Message, error) {
				return task(r.ctl.ReturnTask(ctx, owner, &stewardv1.ReturnTaskRequest{TaskId: taskID, RequestId: requestID, Reasons: reasons[body : body+1]}))
			},
		},
	}
}

// produced is a task produced and waiting for its owner's review.
func produced(t *testing.T, r *harness, name string) string {
	t.Helper()
	id := r.acceptanceTask(t, name, func(c *stewardv1.TaskContract) { c.AcceptanceOwnerRef = owner })
	r.produce(t, id, "")
	return id
}

// TestRequestIDNamesOneCommand: for every command that takes a request
// id, a repeat of the same command and body returns the first answer and
// appends nothing; the id reused with another body, on another task, or
// for another command is AlreadyExists naming its first use, and appends
// nothing either. Before, a CancelTask with an earlier PauseTask's id
// answered with the paused task, and a second ReportUsage with other
// figures was lost.
func TestRequestIDNamesOneCommand(t *testing.T) {
	for _, tc := range requestCases() {
		t.Run(tc.command, func(t *testing.T) {
			r := newHarness(t)
			ctx := context.Background()
			var taskID, otherID string
			if tc.onTask {
				taskID, otherID = tc.setup(t, r, "first"), tc.setup(t, r, "second")
			}
			first, err := tc.send(ctx, r, taskID, "r1", 0)
			if err != nil {
				t.Fatalf("first %s: %v", tc.command, err)
			}
			if !tc.onTask {
				taskID = first.(*stewardv1.Task).Contract.TaskId
			}
			r.settle()
			last := r.last(t)

			again, err := tc.send(ctx, r, taskID, "r1", 0)
			same := tc.same
			if same == nil {
				same = proto.Equal
			}
			if err != nil || !same(first, again) {
				t.Errorf("repeat: %v, answer %v; want the first answer %v", err, again, first)
			}
			if r.last(t) != last {
				t.Errorf("the repeat appended events")
			}

			firstUse := fmt.Sprintf("request id %q was first used for %s on task %s", "r1", tc.command, taskID)
			if tc.perTask {
				firstUse = fmt.Sprintf("proposal_id %q already proposed a different request", "r1")
			}
			refused := func(what string, err error) {
				t.Helper()
				if !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), firstUse) {
					t.Errorf("%s: %v; want already exists: %s", what, err, firstUse)
				}
				r.settle()
				if r.last(t) != last {
					t.Errorf("%s appended events", what)
				}
			}
			if tc.command != "MarkProduced" {
				_, err = tc.send(ctx, r, taskID, "r1", 1)
				refused("another body", err)
			}
			if tc.perTask {
				// Another task's step with the same name is its own.
				if _, err = tc.send(ctx, r, otherID, "r1", 0); err != nil {
					t.Errorf("the same id on another task: %v; want a proposal of its own", err)
				}
				return
			}
			if tc.onTask {
				_, err = tc.send(ctx, r, otherID, "r1", 0)
				refused("another task", err)
			}
			// Another command, by the same caller, on the same task.
			if tc.command == "PauseTask" {
				_, err = r.ctl.CancelTask(ctx, tc.principal, &stewardv1.CancelTaskRequest{TaskId: taskID, RequestId: "r1", Reason: "stop"})
			} else {
				_, err = r.ctl.PauseTask(ctx, rpc.Identity{Principal: tc.principal}, &stewardv1.PauseTaskRequest{TaskId: taskID, RequestId: "r1"})
			}
			refused("another command", err)
		})
	}
}

// TestRequestIDsAreTheTenants: one principal in two tenants who picks the
// same request id makes two tasks, each recorded as its tenant's; a retry
// in one tenant finds that tenant's task.
func TestRequestIDsAreTheTenants(t *testing.T) {
	r := newHarness(t)
	in := func(tenant string) context.Context {
		return rpc.WithIdentity(context.Background(), rpc.Identity{Principal: "user:ana", Tenant: tenant, Verified: true})
	}
	tasks := map[string]string{}
	for _, tenant := range []string{"", "acme", "globex"} {
		tk, created, err := r.ctl.CreateTask(in(tenant), "user:ana", validRequest("demo-1"))
		if err != nil {
			t.Fatalf("tenant %q: %v", tenant, err)
		}
		if !created || tk.Tenant != tenant {
			t.Fatalf("tenant %q: created %v, task of tenant %q", tenant, created, tk.Tenant)
		}
		if want := control.TaskIDIn(requestid.For(tenant, "user:ana"), "demo-1"); tk.Contract.TaskId != want {
			t.Errorf("tenant %q: task id %s, want %s", tenant, tk.Contract.TaskId, want)
		}
		tasks[tenant] = tk.Contract.TaskId
	}
	if len(map[string]bool{tasks[""]: true, tasks["acme"]: true, tasks["globex"]: true}) != 3 {
		t.Fatalf("three tenants' demo-1 made tasks %v; want three", tasks)
	}
	if tasks[""] != control.TaskIDFor("user:ana", "demo-1") {
		t.Errorf("the default tenant's task id changed: %s", tasks[""])
	}
	again, created, err := r.ctl.CreateTask(in("acme"), "user:ana", validRequest("demo-1"))
	if err != nil || created || again.Contract.TaskId != tasks["acme"] {
		t.Fatalf("retry in acme: %v, created %v, task %s; want task %s", err, created, again.GetContract().GetTaskId(), tasks["acme"])
	}
	got := r.WaitTask(tasks["acme"], func(*stewardv1.Task) bool { return true })
	if got.Tenant != "acme" {
		t.Errorf("the folded task's tenant is %q, want acme", got.Tenant)
	}
}

// TestRequestIDsAreTheCallers: two callers who pick the same request id
// make two tasks, and each one's commands under it are its own.
func TestRequestIDsAreTheCallers(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	a, createdA, err := r.ctl.CreateTask(ctx, "user:ana", validRequest("demo-1"))
	if err != nil {
		t.Fatal(err)
	}
	other := validRequest("demo-1")
	other.Contract.Intent = "something else entirely"
	b, createdB, err := r.ctl.CreateTask(ctx, "user:bo", other)
	if err != nil {
		t.Fatalf("the second caller's demo-1: %v", err)
	}
	if !createdA || !createdB || a.Contract.TaskId == b.Contract.TaskId {
		t.Fatalf("tasks %s (created %v) and %s (created %v); want two new tasks", a.Contract.TaskId, createdA, b.Contract.TaskId, createdB)
	}
	if a.Contract.TaskId != control.TaskIDFor("user:ana", "demo-1") || b.Contract.TaskId != control.TaskIDFor("user:bo", "demo-1") {
		t.Errorf("task ids %s and %s are not derived from the caller and the request id", a.Contract.TaskId, b.Contract.TaskId)
	}
	for _, id := range []string{a.Contract.TaskId, b.Contract.TaskId} {
		r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING })
	}
	// The same id on one task by two callers is two commands.
	for _, who := range []string{"agent:one", "agent:two"} {
		if _, err := r.ctl.ReportUsage(ctx, who, &stewardv1.ReportUsageRequest{TaskId: a.Contract.TaskId, RequestId: "u1", Tokens: 5}); err != nil {
			t.Fatalf("usage by %s: %v", who, err)
		}
	}
	if tk := r.WaitTask(a.Contract.TaskId, func(*stewardv1.Task) bool { return true }); tk.BudgetUsed.GetTokens() != 10 {
		t.Errorf("two callers' usage under one request id: %d tokens recorded, want 10", tk.BudgetUsed.GetTokens())
	}
}

// TestDelegationRequestIDNamesOneDelegation is TestRequestIDNamesOneCommand
// for DelegateTask, whose parents need credentials: the id names one
// delegation from one parent, and a refused reuse reserves nothing.
func TestDelegationRequestIDNamesOneDelegation(t *testing.T) {
	d := idleHarness(t)
	ctx := context.Background()
	parentID := d.parent(t, "one-parent", time.Now(), time.Hour).Contract.TaskId
	otherID := d.parent(t, "other-parent", time.Now(), time.Hour).Contract.TaskId
	delegate := func(parent string, c *stewardv1.TaskContract) (*stewardv1.Task, bool, error) {
		return d.ctl.DelegateTask(ctx, "agent:lead", &stewardv1.DelegateTaskRequest{ParentTaskId: parent, Contract: c, DelegateRef: "agent:sub", RequestId: "d1"})
	}
	first, created, err := delegate(parentID, subContract())
	if err != nil || !created {
		t.Fatalf("first delegation: %v (created %v)", err, created)
	}
	last := d.last(t)
	again, created, err := delegate(parentID, subContract())
	if err != nil || created || again.Contract.TaskId != first.Contract.TaskId || d.last(t) != last {
		t.Fatalf("repeat: %v, created %v, task %s (first %s), appended %v", err, created, again.GetContract().GetTaskId(), first.Contract.TaskId, d.last(t) != last)
	}
	firstUse := fmt.Sprintf("request id %q was first used for DelegateTask on task %s", "d1", parentID)
	other := subContract()
	other.Intent = "something else"
	for what, send := range map[string]func() error{
		"another body": func() error { _, _, err := delegate(parentID, other); return err },
		"another task": func() error { _, _, err := delegate(otherID, subContract()); return err },
		"another command": func() error {
			_, err := d.ctl.PauseTask(ctx, rpc.Identity{Principal: "agent:lead"}, &stewardv1.PauseTaskRequest{TaskId: parentID, RequestId: "d1"})
			return err
		},
	} {
		if err := send(); !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), firstUse) {
			t.Errorf("%s: %v; want already exists: %s", what, err, firstUse)
		}
		if d.last(t) != last {
			t.Errorf("%s appended events", what)
		}
	}
}

// TestAProposalRefusedForItsParametersKeepsItsID: an agent told its
// parameters are wrong fixes them and proposes again under the same
// proposal id; the refusal did not spend it.
func TestAProposalRefusedForItsParametersKeepsItsID(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	taskID := r.acceptanceTask(t, "fix-params", nil)
	bad, _ := structpb.NewStruct(map[string]any{"wrong": "field"})
	if _, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: "step-1", Tool: "write", Params: bad}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("parameters failing the schema: %v, want invalid", err)
	}
	good, _ := structpb.NewStruct(map[string]any{"text": "hello"})
	if _, created, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: "step-1", Tool: "write", Params: good}); err != nil || !created {
		t.Fatalf("the fixed proposal under the same id: created %v, %v", created, err)
	}
}
