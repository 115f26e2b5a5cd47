package e2e_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// subject is what one call of the matrix names: a task of matrixTenant,
// and, as the state it is in has them, an action and an approval.
type subject struct {
	task, action string
	approval     *stewardv1.Approval
	revision     string
	// schedule is a schedule of the agent's, for the schedule calls.
	schedule string
	// objective is the objective of the "objective" state, its owner's.
	objective string
	// rollout is a ramping rollout of acme's (authorization_rollout_test.go).
	rollout string
}

// matrixCall is how the matrix calls one RPC.
type matrixCall struct {
	// state is the state of the task the call names, a key of
	// matrixStates; "" for a call that names none.
	state string
	// changes says that a call allowed changes the task (or the
	// approval): each caller allowed is given one of its own, and the
	// callers refused share one.
	changes bool
	// call makes the call as c, valid for the state, with name unique to
	// the cell (request ids, proposal ids, tool names).
	call func(ctx context.Context, c matrixCaller, s subject, name string) error
}

// matrix is the running binary and its callers.
type matrix struct {
	// acme makes the tasks, as acme's agent, owner and approver.
	acme    *harness
	callers map[string]map[string]matrixCaller // tenant → column → caller
	// shared holds one task in each state, for the calls that change
	// nothing.
	shared map[string]subject
}

// newMatrix signs a JWT for every caller of both tenants, and makes one
// task in each state, all at once.
func newMatrix(t *testing.T, h *harness, idp *stewardtest.JWTIssuer) *matrix {
	m := &matrix{callers: map[string]map[string]matrixCaller{}, shared: map[string]subject{}}
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, tenant := range []string{matrixTenant, otherTenant} {
		m.callers[tenant] = map[string]matrixCaller{}
		for _, c := range matrixCallers {
			claims := idp.Claims(c.principal, c.roles...)
			claims["tenant"] = tenant
			token := idp.Sign(t, claims)
			opt := connect.WithInterceptors(stewardtest.Bearer(token))
			m.callers[tenant][c.column] = matrixCaller{authed: withToken(h.url, token),
				actions: stewardv1connect.NewActionServiceClient(hc, h.url, opt), tools: stewardv1connect.NewToolServiceClient(hc, h.url, opt),
				deadLetters: stewardv1connect.NewDeadLetterServiceClient(hc, h.url, opt), rollouts: stewardv1connect.NewRolloutServiceClient(hc, h.url, opt)}
		}
		withToolAdmin(m.callers[tenant]) // authorization_rollout_test.go
	}
	acme := m.callers[matrixTenant]
	m.acme = &harness{top: t, url: h.url, dir: h.dir, proc: h.proc, fixtures: map[string]any{},
		agent: acme["agent"].authed, owner: acme["owner"].authed, approver: acme["approver"].authed, operator: acme["operator"].authed}
	m.acme.fixtures[rolloutAdmin] = acme["tool-admin"]
	var mu sync.Mutex
	var wg sync.WaitGroup
	for state := range matrixStates {
		wg.Go(func() {
			t.Run("state "+state, func(t *testing.T) {
				s := m.build(t, state, "matrix-"+state)
				mu.Lock()
				m.shared[state] = s
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return m
}

// build makes a task of acme's agent in state, under request id name.
func (m *matrix) build(t *testing.T, state, name string) subject {
	t.Helper()
	return matrixStates[state](t, m.acme, name)
}

// matrixContract is the contract of the matrix's tasks: its parts are the
// columns of docs/authorization.md.
func matrixContract() *stewardv1.TaskContract {
	k := contract()
	k.AllowedTools = []string{"search", "wire", "slow"}
	k.AcceptanceOwnerRef, k.SeparationOfDuties = "user:rev", true
	// A credential lasts an hour (--credential-ttl), short of the deadline,
	// so that a renewal extends it.
	k.Deadline = timestamppb.New(time.Now().Add(24 * time.Hour))
	k.Milestones = []*stewardv1.Milestone{{MilestoneId: "m1", Title: "All of it"}} // what ReportProgress reports on
	return k
}

// matrixStates make a task in each state the calls need, as e's agent.
var matrixStates = map[string]func(t *testing.T, e *harness, name string) subject{
	"running": func(t *testing.T, e *harness, name string) subject {
		return subject{task: e.create(t, name, matrixContract())}
	},
	// paused is paused by its owner, whose pause its agent may not lift.
	"paused": func(t *testing.T, e *harness, name string) subject {
		id := e.create(t, name, matrixContract())
		if _, err := e.owner.tasks.PauseTask(context.Background(), connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: id, Reason: "hold on"})); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, e.agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_PAUSED)
		return subject{task: id}
	},
	"asking": func(t *testing.T, e *harness, name string) subject {
		id := e.create(t, name, matrixContract())
		if _, err := e.agent.tasks.RequestInput(context.Background(), connect.NewRequest(&stewardv1.RequestInputRequest{
			TaskId: id, Question: "Which region?", Choices: []string{"eu", "us"}})); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, e.agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT)
		return subject{task: id}
	},
	"produced": func(t *testing.T, e *harness, name string) subject {
		id := e.create(t, name, matrixContract())
		resp, err := e.agent.tasks.MarkProduced(context.Background(), connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: id}))
		if err != nil {
			t.Fatal(err)
		}
		if s := resp.Msg.Task.Status; s != stewardv1.TaskStatus_TASK_STATUS_PRODUCED {
			t.Fatalf("produced task is %v (%s)", s, resp.Msg.Task.StatusReason)
		}
		return subject{task: id}
	},
	// approval is a wire waiting for its approval.
	// revising has a revision of its contract open, proposed by its agent.
	"revising": func(t *testing.T, e *harness, name string) subject {
		id := e.create(t, name, matrixContract())
		resp, err := e.agent.tasks.ReviseContract(context.Background(), connect.NewRequest(&stewardv1.ReviseContractRequest{
			TaskId: id, Reason: "the scope grew", Contract: &stewardv1.TaskContract{Intent: "Summarise last month's incidents"}}))
		if err != nil {
			t.Fatal(err)
		}
		return subject{task: id, revision: resp.Msg.Revision.RevisionId}
	},
	"approval": func(t *testing.T, e *harness, name string) subject {
		id := e.create(t, name, matrixContract())
		ap := e.approval(t, id, "wire-1", 120)
		return subject{task: id, action: ap.ActionId, approval: ap}
	},
	// worked is a task whose search ran and whose agent submitted an
	// artifact: it has content to read.
	"worked": func(t *testing.T, e *harness, name string) subject {
		id := e.create(t, name, matrixContract())
		a := propose(t, e.agent, id, "search-1", "search", map[string]any{"q": "incidents"})
		waitAction(t, e.agent.clients, id, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if _, err := e.agent.tasks.SubmitArtifact(context.Background(), connect.NewRequest(&stewardv1.SubmitArtifactRequest{
			TaskId: id, Name: "report.md", MediaType: "text/markdown", Content: []byte("# Incidents\n")})); err != nil {
			t.Fatal(err)
		}
		return subject{task: id, action: a.ActionId}
	},
	"schedule":        func(t *testing.T, e *harness, name string) subject { return matrixSchedule(t, e, name, false) },
	"paused schedule": func(t *testing.T, e *harness, name string) subject { return matrixSchedule(t, e, name, true) },
	"rollout":         matrixRollout,
	// objective is an objective of acme's owner's (user:ana).
	"objective": func(t *testing.T, e *harness, name string) subject {
		resp, err := e.owner.tasks.CreateObjective(context.Background(), connect.NewRequest(&stewardv1.CreateObjectiveRequest{RequestId: name, Intent: "ship Q3"}))
		if err != nil {
			t.Fatal(err)
		}
		return subject{objective: resp.Msg.Objective.ObjectiveId}
	},
	// unknown is a call to the slow tool, whose outcome is unknown.
	"unknown": func(t *testing.T, e *harness, name string) subject {
		a := e.unknownActionOn(t, e.create(t, name, matrixContract()))
		return subject{task: a.task, action: a.action}
	},
}

// matrixSchedule makes a schedule as e's agent, paused when paused.
func matrixSchedule(t *testing.T, e *harness, name string, paused bool) subject {
	resp, err := e.agent.schedules.CreateSchedule(context.Background(), connect.NewRequest(&stewardv1.CreateScheduleRequest{
		RequestId: name, Spec: &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: "0 9 * * *"}},
		Template: &stewardv1.ScheduleTemplate{Contract: contract()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Schedule.ScheduleId
	if paused {
		if _, err := e.agent.schedules.PauseSchedule(context.Background(), connect.NewRequest(&stewardv1.PauseScheduleRequest{ScheduleId: id})); err != nil {
			t.Fatal(err)
		}
	}
	return subject{schedule: id}
}

// inline returns errBlanked unless t, as served, carries the result of its
// action actionID inline: a search's result is small enough to.
func inline(t *stewardv1.Task, actionID string) error {
	for _, a := range t.Actions {
		if a.ActionId == actionID && a.Outcome.GetResult() != nil {
			return nil
		}
	}
	return errBlanked
}

// matrixCalls holds a valid call of every RPC, by procedure.
var matrixCalls = map[string]matrixCall{
	stewardv1connect.TaskServiceCreateTaskProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, name string) error {
		_, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: name, Contract: contract()}))
		return err
	}},
	stewardv1connect.TaskServiceCancelTaskProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: s.task, Reason: "not needed"}))
		return err
	}},
	stewardv1connect.TaskServicePauseTaskProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: s.task, Reason: "hold on"}))
		return err
	}},
	stewardv1connect.TaskServiceResumeTaskProcedure: {state: "paused", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: s.task}))
		return err
	}},
	stewardv1connect.TaskServiceFailTaskProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.tasks.FailTask(ctx, connect.NewRequest(&stewardv1.FailTaskRequest{TaskId: s.task, Reason: "the data is gone"}))
		return err
	}},
	stewardv1connect.TaskServiceReportUsageProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.ReportUsage(ctx, connect.NewRequest(&stewardv1.ReportUsageRequest{TaskId: s.task, Tokens: 10, Model: "m", RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceRaiseBudgetProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.RaiseBudget(ctx, connect.NewRequest(&stewardv1.RaiseBudgetRequest{TaskId: s.task, MaxTokens: 60_000, Reason: "more", RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceProposeActionProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		params, err := structpb.NewStruct(map[string]any{"q": "incidents"})
		if err != nil {
			return err
		}
		_, err = c.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: s.task, ProposalId: name, Tool: "search", Target: "index:incidents", Params: params}))
		return err
	}},
	stewardv1connect.TaskServiceDelegateTaskProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		sub := contract()
		sub.Budget = &stewardv1.Budget{MaxTokens: 10_000}
		_, err := c.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{ParentTaskId: s.task, Contract: sub, DelegateRef: "agent:sub", RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceSubmitPlanProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: s.task, Plan: searchPlan(), RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceSubmitArtifactProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{TaskId: s.task, Name: "notes.md", MediaType: "text/markdown", Content: []byte("notes"), RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceMarkProducedProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: s.task, RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceAcceptTaskProcedure: {state: "produced", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.AcceptTask(ctx, connect.NewRequest(&stewardv1.AcceptTaskRequest{TaskId: s.task, Reason: "it answers the question", RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceReturnTaskProcedure: {state: "produced", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.ReturnTask(ctx, connect.NewRequest(&stewardv1.ReturnTaskRequest{TaskId: s.task, Reasons: []string{"cite the tickets"}, RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceExtendDeadlineProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.ExtendDeadline(ctx, connect.NewRequest(&stewardv1.ExtendDeadlineRequest{TaskId: s.task,
			Deadline: timestamppb.New(time.Now().Add(48 * time.Hour)), Reason: "the data came late", RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceReviseContractProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.ReviseContract(ctx, connect.NewRequest(&stewardv1.ReviseContractRequest{TaskId: s.task, RequestId: name,
			Reason: "the scope grew", Contract: &stewardv1.TaskContract{DesiredOutcome: "A two-page summary"}}))
		return err
	}},
	stewardv1connect.TaskServiceDecideContractRevisionProcedure: {state: "revising", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.DecideContractRevision(ctx, connect.NewRequest(&stewardv1.DecideContractRevisionRequest{TaskId: s.task, RevisionId: s.revision, Approve: true, RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceRequestInputProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{TaskId: s.task, Question: "Which region?", Choices: []string{"eu", "us"}, RequestId: name}))
		return err
	}},
	stewardv1connect.TaskServiceRecordDecisionProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.RecordDecision(ctx, connect.NewRequest(&stewardv1.RecordDecisionRequest{TaskId: s.task, Decision: &stewardv1.Decision{
			DecisionId: name, Call: &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-a"}, LedTo: &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}}}}))
		return err
	}},
	stewardv1connect.TaskServiceAttachContextProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.AttachContext(ctx, connect.NewRequest(&stewardv1.AttachContextRequest{TaskId: s.task, Item: &stewardv1.ContextItem{
			ContextId: name, Uri: "https://wiki.example/" + name, Digest: "sha256:aa"}}))
		return err
	}},
	stewardv1connect.TaskServiceHeartbeatProcedure: {state: "running", call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.Heartbeat(ctx, connect.NewRequest(&stewardv1.HeartbeatRequest{TaskId: s.task, Note: name}))
		return err
	}},
	stewardv1connect.TaskServiceReportProgressProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.ReportProgress(ctx, connect.NewRequest(&stewardv1.ReportProgressRequest{TaskId: s.task, MilestoneId: "m1", Percent: 10, Note: name}))
		return err
	}},
	stewardv1connect.TaskServiceForkTaskProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.tasks.ForkTask(ctx, connect.NewRequest(&stewardv1.ForkTaskRequest{TaskId: s.task, Reason: "another model", RequestId: name, MaxTokens: 100}))
		return err
	}},
	stewardv1connect.TaskServiceProvideInputProcedure: {state: "asking", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.tasks.ProvideInput(ctx, connect.NewRequest(&stewardv1.ProvideInputRequest{TaskId: s.task, Answer: "eu"}))
		return err
	}},

	stewardv1connect.ScheduleServiceCreateScheduleProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, name string) error {
		_, err := c.schedules.CreateSchedule(ctx, connect.NewRequest(&stewardv1.CreateScheduleRequest{RequestId: name,
			Spec: &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: "0 9 * * *"}}, Template: &stewardv1.ScheduleTemplate{Contract: contract()}}))
		return err
	}},
	stewardv1connect.ScheduleServiceGetScheduleProcedure: {state: "schedule", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.schedules.GetSchedule(ctx, connect.NewRequest(&stewardv1.GetScheduleRequest{ScheduleId: s.schedule}))
		return err
	}},
	stewardv1connect.ScheduleServiceListSchedulesProcedure: {state: "schedule", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		resp, err := c.schedules.ListSchedules(ctx, connect.NewRequest(&stewardv1.ListSchedulesRequest{PageSize: 1000}))
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(resp.Msg.Schedules, func(x *stewardv1.Schedule) bool { return x.ScheduleId == s.schedule }) {
			return errLeftOut
		}
		return nil
	}},
	stewardv1connect.ScheduleServicePauseScheduleProcedure: {state: "schedule", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.schedules.PauseSchedule(ctx, connect.NewRequest(&stewardv1.PauseScheduleRequest{ScheduleId: s.schedule}))
		return err
	}},
	stewardv1connect.ScheduleServiceResumeScheduleProcedure: {state: "paused schedule", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.schedules.ResumeSchedule(ctx, connect.NewRequest(&stewardv1.ResumeScheduleRequest{ScheduleId: s.schedule}))
		return err
	}},
	stewardv1connect.ScheduleServiceDeleteScheduleProcedure: {state: "schedule", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.schedules.DeleteSchedule(ctx, connect.NewRequest(&stewardv1.DeleteScheduleRequest{ScheduleId: s.schedule}))
		return err
	}},
	stewardv1connect.GovernanceServiceListApprovalsProcedure: {state: "approval", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		resp, err := c.governance.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{PendingOnly: true}))
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(resp.Msg.Approvals, func(a *stewardv1.Approval) bool { return a.ApprovalId == s.approval.ApprovalId }) {
			return errLeftOut
		}
		return nil
	}},
	stewardv1connect.GovernanceServiceGetApprovalProcedure: {state: "approval", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.governance.GetApproval(ctx, connect.NewRequest(&stewardv1.GetApprovalRequest{ApprovalId: s.approval.ApprovalId}))
		return err
	}},
	stewardv1connect.GovernanceServiceDecideApprovalProcedure: {state: "approval", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
			ApprovalId: s.approval.ApprovalId, ActionHash: s.approval.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE}))
		return err
	}},
	stewardv1connect.GovernanceServiceRevokeCredentialProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.governance.RevokeCredential(ctx, connect.NewRequest(&stewardv1.RevokeCredentialRequest{TaskId: s.task, Reason: "agent key leaked"}))
		return err
	}},
	stewardv1connect.GovernanceServiceRenewCredentialProcedure: {state: "running", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.governance.RenewCredential(ctx, connect.NewRequest(&stewardv1.RenewCredentialRequest{TaskId: s.task, Reason: "long job", RequestId: name}))
		return err
	}},
	stewardv1connect.GovernanceServiceGetCredentialKeyProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, _ string) error {
		_, err := c.governance.GetCredentialKey(ctx, connect.NewRequest(&stewardv1.GetCredentialKeyRequest{}))
		return err
	}},

	stewardv1connect.RolloutServiceStartRolloutProcedure:    {call: startRolloutCall},
	stewardv1connect.RolloutServiceGetRolloutProcedure:      {state: "rollout", call: getRolloutCall},
	stewardv1connect.RolloutServiceListRolloutsProcedure:    {state: "rollout", call: listRolloutsCall},
	stewardv1connect.RolloutServiceRollBackRolloutProcedure: {state: "rollout", changes: true, call: rollBackRolloutCall},
	stewardv1connect.ToolServiceRegisterToolProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, name string) error {
		_, err := c.tools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: &stewardv1.ToolContract{
			Name: name, Version: "1.0.0", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_PUBLIC,
			Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: "http://192.0.2.1/x"}}}})) // a documentation address: a tenant's tool may name it
		return err
	}},
	stewardv1connect.ToolServiceGetToolProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, _ string) error {
		_, err := c.tools.GetTool(ctx, connect.NewRequest(&stewardv1.GetToolRequest{Name: "search"}))
		return err
	}},
	stewardv1connect.ToolServiceListToolsProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, _ string) error {
		_, err := c.tools.ListTools(ctx, connect.NewRequest(&stewardv1.ListToolsRequest{}))
		return err
	}},

	stewardv1connect.ActionServiceSettleActionProcedure: {state: "unknown", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.actions.SettleAction(ctx, connect.NewRequest(&stewardv1.SettleActionRequest{TaskId: s.task, ActionId: s.action,
			State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, Reason: "the card shows the charge"}))
		return err
	}},

	stewardv1connect.QueryServiceGetTaskProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		resp, err := c.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: s.task}))
		if err != nil {
			return err
		}
		return inline(resp.Msg.Task, s.action)
	}},
	stewardv1connect.QueryServiceGetActionProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		resp, err := c.query.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: s.task, ActionId: s.action}))
		if err != nil {
			return err
		}
		return inline(&stewardv1.Task{Actions: []*stewardv1.Action{resp.Msg.Action}}, s.action)
	}},
	stewardv1connect.QueryServiceListTasksProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		req := &stewardv1.ListTasksRequest{PageSize: 100}
		for {
			resp, err := c.query.ListTasks(ctx, connect.NewRequest(req))
			if err != nil {
				return err
			}
			if i := slices.IndexFunc(resp.Msg.Tasks, func(tk *stewardv1.Task) bool { return tk.Contract.TaskId == s.task }); i >= 0 {
				return inline(resp.Msg.Tasks[i], s.action)
			}
			if resp.Msg.NextPageToken == "" {
				return errLeftOut
			}
			req.PageToken = resp.Msg.NextPageToken
		}
	}},
	stewardv1connect.QueryServiceWatchTaskProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		return watchFirst(ctx, c.query, s.task)
	}},
	stewardv1connect.QueryServiceListDecisionsProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.query.ListDecisions(ctx, connect.NewRequest(&stewardv1.ListDecisionsRequest{TaskId: s.task}))
		return err
	}},
	stewardv1connect.QueryServiceGetTimelineProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.query.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: s.task}))
		return err
	}},
	stewardv1connect.QueryServiceListBreakersProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, _ string) error {
		_, err := c.query.ListBreakers(ctx, connect.NewRequest(&stewardv1.ListBreakersRequest{}))
		return err
	}},
	stewardv1connect.TaskServiceCreateObjectiveProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, name string) error {
		_, err := c.tasks.CreateObjective(ctx, connect.NewRequest(&stewardv1.CreateObjectiveRequest{RequestId: name, Intent: "ship Q3"}))
		return err
	}},
	stewardv1connect.TaskServiceCloseObjectiveProcedure: {state: "objective", changes: true, call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.tasks.CloseObjective(ctx, connect.NewRequest(&stewardv1.CloseObjectiveRequest{
			ObjectiveId: s.objective, Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE, Reason: "shipped"}))
		return err
	}},
	stewardv1connect.QueryServiceGetObjectiveProcedure: {state: "objective", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.query.GetObjective(ctx, connect.NewRequest(&stewardv1.GetObjectiveRequest{ObjectiveId: s.objective}))
		return err
	}},
	stewardv1connect.QueryServiceListObjectivesProcedure: {state: "objective", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		req := &stewardv1.ListObjectivesRequest{}
		for {
			resp, err := c.query.ListObjectives(ctx, connect.NewRequest(req))
			if err != nil {
				return err
			}
			if slices.ContainsFunc(resp.Msg.Objectives, func(o *stewardv1.Objective) bool { return o.ObjectiveId == s.objective }) {
				return nil
			}
			if resp.Msg.NextPageToken == "" {
				return errLeftOut
			}
			req.PageToken = resp.Msg.NextPageToken
		}
	}},
	stewardv1connect.QueryServiceGetTaskTreeProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.query.GetTaskTree(ctx, connect.NewRequest(&stewardv1.GetTaskTreeRequest{TaskId: s.task}))
		return err
	}},
	stewardv1connect.QueryServiceWhoAmIProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, _ string) error {
		_, err := c.query.WhoAmI(ctx, connect.NewRequest(&stewardv1.WhoAmIRequest{}))
		return err
	}},
	stewardv1connect.QueryServiceGetReceiptProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: s.task}))
		return err
	}},
	stewardv1connect.QueryServiceGetResultProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.query.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: s.task, ActionId: s.action}))
		return err
	}},
	stewardv1connect.QueryServiceGetArtifactContentProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		return drain(c.query.GetArtifactContent(ctx, connect.NewRequest(&stewardv1.GetArtifactContentRequest{TaskId: s.task, Name: "report.md"})))
	}},

	stewardv1connect.AuditServiceReplayTaskProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		return drain(c.audit.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: s.task})))
	}},
	stewardv1connect.AuditServiceExportBundleProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		return drain(c.audit.ExportBundle(ctx, connect.NewRequest(&stewardv1.ExportBundleRequest{TaskId: s.task})))
	}},
	stewardv1connect.AuditServiceListPolicySnapshotsProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		stream, err := c.audit.ListPolicySnapshots(ctx, connect.NewRequest(&stewardv1.ListPolicySnapshotsRequest{}))
		if err != nil {
			return err
		}
		defer stream.Close()
		found := false
		for stream.Receive() {
			found = found || stream.Msg().Snapshot.GetTaskId() == s.task
		}
		if err := stream.Err(); err != nil || found {
			return err
		}
		return errLeftOut
	}},
	stewardv1connect.AuditServiceVerifyTaskProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, _ string) error {
		_, err := c.audit.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: s.task}))
		return err
	}},
	// The dead letters are the deployment's: the matrix's callers, all
	// of a named tenant, are refused them (e2e/deadletters_test.go
	// lists and replays as the default tenant's operator).
	stewardv1connect.DeadLetterServiceListDeadLettersProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, _ string) error {
		_, err := c.deadLetters.ListDeadLetters(ctx, connect.NewRequest(&stewardv1.ListDeadLettersRequest{}))
		return err
	}},
	stewardv1connect.DeadLetterServiceReplayDeadLetterProcedure: {call: func(ctx context.Context, c matrixCaller, _ subject, _ string) error {
		_, err := c.deadLetters.ReplayDeadLetter(ctx, connect.NewRequest(&stewardv1.ReplayDeadLetterRequest{Sequence: 1, Consumer: "control"}))
		return err
	}},
	stewardv1connect.AuditServiceRecordFindingProcedure: {state: "worked", call: func(ctx context.Context, c matrixCaller, s subject, name string) error {
		_, err := c.audit.RecordFinding(ctx, connect.NewRequest(&stewardv1.RecordFindingRequest{TaskId: s.task, ActionId: s.action, RequestId: name,
			Kind: stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION, Description: "searched outside the ticket's scope"}))
		return err
	}},
}

// searchPlan is a plan of one search, which the matrix's tasks may call.
func searchPlan() *stewardv1.Plan {
	return &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		{Id: "find", Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: "index:incidents"}}},
	}}
}
