package access

import (
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// steer is the rule of the steering commands: the task's own people — the
// agent doing it, whom it is for — and operators, who answer for every
// task. A stranger with a token must not stop someone else's work.
var steer = Rule{Group: Steering, Parties: Agent | Owner, Roles: []string{Operator}}

// rolloutTenant is the plane's check of every rollout RPC.
const rolloutTenant = "only the caller's tenant's rollouts; another tenant's is not_found"

// scheduleTenant is the plane's check of every schedule RPC.
const scheduleTenant = "only the caller's tenant's schedules; another tenant's is not_found"

// scheduleSteer is the rule of the commands that steer a schedule: its
// creator, whose runs it makes, or an operator; the control plane checks,
// as a schedule is not a task the table can look parties up in.
func scheduleSteer(what string) Rule {
	return Rule{Group: Steering, Plane: scheduleTenant + "; only its creator or an operator", Why: "the schedule's creator, or an operator, " + what}
}

// work is the rule of the agent's commands: a task's work is done by the
// agent it belongs to, not by anyone holding a token.
func work(why string) Rule { return Rule{Group: Work, Parties: Agent, Why: why} }

// read is the rule of a query any authenticated caller may make.
func read(why string) Rule { return Rule{Group: Read, Why: why} }

// Table names, for every procedure of every Steward service, who may call
// it. A procedure without a row is refused (a test checks that every
// procedure the generated code serves has one); docs/roles.md is this
// table in words, checked against it.
var Table = map[string]Rule{
	// TaskService: starting, steering and doing tasks.
	stewardv1connect.TaskServiceCreateTaskProcedure: {Group: Start, Why: "anyone known may ask for work; they become the task's creator, its agent"},
	stewardv1connect.TaskServicePauseTaskProcedure: withWhy(withPlane(steer, "with tokens, a task paused already is paused again only by its requester, accountable owner or an operator, over someone else's pause, which becomes theirs (mayRepause)"),
		"the task's agent or people, or an operator, may hold it"),
	stewardv1connect.TaskServiceResumeTaskProcedure: withWhy(withPlane(steer, "with tokens, a task waiting for input only by its requester, accountable owner or an operator, and a paused one also by whoever paused it (mayResume): an agent cannot wave away its own question or lift its owner's pause"),
		"the task's agent or people, or an operator, may let it go on"),
	stewardv1connect.TaskServiceCancelTaskProcedure:     withWhy(steer, "the task's agent or people, or an operator, may end it"),
	stewardv1connect.TaskServiceFailTaskProcedure:       withWhy(steer, "the task's agent or people, or an operator, may say it failed"),
	stewardv1connect.TaskServiceProposeActionProcedure:  work("an action is spent against the task's credential and budget: only its agent proposes"),
	stewardv1connect.TaskServiceReportUsageProcedure:    work("usage is charged to the task's budget as its agent reports it"),
	stewardv1connect.TaskServiceSubmitPlanProcedure:     work("a plan is the agent's way of doing the task: only its agent writes it"),
	stewardv1connect.TaskServiceSubmitArtifactProcedure: work("the task's result is handed in by its agent"),
	stewardv1connect.TaskServiceMarkProducedProcedure:   work("only the agent says that its work is done (it is then reviewed)"),
	stewardv1connect.TaskServiceRequestInputProcedure:   work("the agent asks its people a question"),
	stewardv1connect.TaskServiceRecordDecisionProcedure: work("a decision is the agent's account of why it acts, and its reported cost is charged to the task"),
	stewardv1connect.TaskServiceAttachContextProcedure:  work("the context ledger is what the agent drew on"),
	stewardv1connect.TaskServiceHeartbeatProcedure:      work("the agent says it is at work: its silence is asked about, escalated and suspends its task (docs/liveness.md)"),
	stewardv1connect.TaskServiceReportProgressProcedure: work("the agent says how far a milestone of its work has come (docs/milestones.md)"),
	stewardv1connect.TaskServiceForkTaskProcedure:       work("a fork recomputes the agent's work from a point, on budget reserved from the task: only its agent forks"),
	stewardv1connect.TaskServiceDelegateTaskProcedure: {Group: Work, Parties: Agent, TaskField: "parent_task_id",
		Why: "a sub-task narrows the parent's credential: only the parent's agent hands its work on"},
	stewardv1connect.TaskServiceRaiseBudgetProcedure: {Group: Operation, Roles: []string{BudgetOwner},
		Plane: "the task it answers with is blanked as GetTask's for a budget owner who may not read its content (pkg/content)",
		Why:   "money is a budget owner's decision: an agent must not raise its own budget"},
	stewardv1connect.TaskServiceAcceptTaskProcedure: {Group: Review, Plane: "the contract's acceptance owner, and under separation of duties not the requester (the fold)",
		Why: "produced is not accepted: the acceptance owner decides"},
	stewardv1connect.TaskServiceReturnTaskProcedure: {Group: Review, Plane: "the contract's acceptance owner, as for AcceptTask (the fold)",
		Why: "the acceptance owner sends a result back"},
	stewardv1connect.TaskServiceExtendDeadlineProcedure: {Group: Review, Plane: "the contract's accountable owner (the fold)",
		Why: "the deadline is the accountable owner's promise"},
	stewardv1connect.TaskServiceCreateObjectiveProcedure: {Group: Start, Why: "anyone known may set an objective; they own it unless they name another owner"},
	stewardv1connect.TaskServiceCloseObjectiveProcedure: {Group: Steering, Plane: objectiveOwner,
		Why: "whoever answers for an objective says it is done or abandoned"},
	stewardv1connect.TaskServiceProvideInputProcedure: {Group: Review, Parties: Owner | Backup, Roles: []string{Operator},
		Plane: "the same rule on the task as it is when answered, in every mode (mayAnswer); a question that names whom it asks (ask_ref) only by them or, with tokens, an operator (mayAnswerAsked); the input backup only once the question was escalated to them (isInputBackup)",
		Why:   "the agent's question is answered by whom the task is for, or an operator"},
	stewardv1connect.TaskServiceReviseContractProcedure: {Group: Review, Parties: Agent | Owner,
		Plane: "an ended task, or one with a revision open, is not revised; the accountable owner's proposal is their approval (the fold)",
		Why:   "a goal changes with the people it is for, and its agent may propose the change; it takes effect when they approve (docs/revisions.md)"},
	stewardv1connect.TaskServiceDecideContractRevisionProcedure: {Group: Review,
		Plane: "the contract's accountable owner, or a holder of a role the revision's policy snapshot names who neither proposed it nor approved it as owner (the fold; the role, the control plane); the task it answers with is blanked as GetTask's for a role's holder who may not read its content (pkg/content)",
		Why:   "policy names the roles per revision, as per approval"},

	// ScheduleService: tasks made again and again from one template.
	stewardv1connect.ScheduleServiceCreateScheduleProcedure: {Group: Start, Why: "anyone known may ask for recurring work; they become its creator, and the agent of every run"},
	stewardv1connect.ScheduleServiceGetScheduleProcedure:    {Group: Read, Plane: scheduleTenant, Why: "a schedule's state and firings are shown to everyone known, as a task's"},
	stewardv1connect.ScheduleServiceListSchedulesProcedure:  {Group: Read, Plane: scheduleTenant, Why: "as GetSchedule"},
	stewardv1connect.ScheduleServicePauseScheduleProcedure:  scheduleSteer("may hold it"),
	stewardv1connect.ScheduleServiceResumeScheduleProcedure: scheduleSteer("may let it fire again"),
	stewardv1connect.ScheduleServiceDeleteScheduleProcedure: scheduleSteer("may end it"),

	// GovernanceService: approvals and credentials.
	stewardv1connect.GovernanceServiceListApprovalsProcedure: {Group: Read, Plane: "parameters_json is blanked and action_hash keyed for a caller who may neither read the task's content nor decide the approval (pkg/content)", Why: "approvers find what waits for them"},
	stewardv1connect.GovernanceServiceGetApprovalProcedure:   {Group: Read, Plane: "as ListApprovals", Why: "approvers see what an action will do before deciding"},
	stewardv1connect.GovernanceServiceDecideApprovalProcedure: {Group: Approval,
		Plane: "one of the roles the approval asks for (policy names them), not the proposer, separation of duties, the authorizer (docs/approvals.md)",
		Why:   "who may approve depends on the action: policy names the roles per approval"},
	stewardv1connect.GovernanceServiceRevokeCredentialProcedure: {Group: Operation, Roles: []string{Operator}, PlaneField: "schedule_id",
		Plane: "a schedule's (schedule_id set): " + scheduleTenant + "; its creator or an operator, decided by the governance plane, not the role table",
		Why:   "a revocation is the operator's emergency stop, and a schedule's creator may withdraw the credential it acts under"},
	stewardv1connect.GovernanceServiceRenewCredentialProcedure: {Group: Operation, Roles: []string{Operator},
		Why: "renewing lets a task act longer: an operator's decision"},
	stewardv1connect.GovernanceServiceGetCredentialKeyProcedure: {Group: Read, Public: true,
		Why: "the public key verifies credentials and permits: it is public, and a deployment fetches it before any token is handed out"},

	// RolloutService: ramping a tool version up (docs/rollouts.md).
	stewardv1connect.RolloutServiceStartRolloutProcedure: {Group: Operation, Roles: []string{Operator, ToolAdmin}, Plane: rolloutTenant,
		Why: "which version of a tool new tasks get is an operator's change to every task of the tenant"},
	stewardv1connect.RolloutServiceRollBackRolloutProcedure: {Group: Operation, Roles: []string{Operator, ToolAdmin}, Plane: rolloutTenant,
		Why: "as StartRollout: a person may stop a ramp-up before its figures do"},
	stewardv1connect.RolloutServiceGetRolloutProcedure: {Group: Operation, Roles: []string{Operator, ToolAdmin, Auditor}, Plane: rolloutTenant,
		Why: "a rollout's figures are read by those who run it and those who audit it"},
	stewardv1connect.RolloutServiceListRolloutsProcedure: {Group: Operation, Roles: []string{Operator, ToolAdmin, Auditor}, Plane: rolloutTenant, Why: "as GetRollout"},

	// ToolService.
	stewardv1connect.ToolServiceRegisterToolProcedure: {Group: Operation, Roles: []string{ToolAdmin},
		Plane: "the tool is the caller's tenant's (the default tenant's are global); a tenant may not take a global tool's name, nor the default tenant a tenant's (docs/tenants.md)",
		Why:   "a tool contract decides what policy sees (its effect class above all)"},
	stewardv1connect.ToolServiceGetToolProcedure: {Group: Read, Plane: "only the caller's tenant's tools and the global ones; another tenant's is not_found (docs/tenants.md)",
		Why: "agents read the contracts of the tools they call"},
	stewardv1connect.ToolServiceListToolsProcedure: {Group: Read, Plane: "as GetTool", Why: "agents read the contracts of the tools they call"},

	// ActionService.
	stewardv1connect.ActionServiceSettleActionProcedure: {Group: Operation,
		Plane: "an unknown outcome with the operator role; an action an approver said a person executes by that person alone, whatever roles others hold (mayFinish)",
		Why:   "settling says what happened in the world: not the agent whose action it was, and a person's execution only the person who did it"},

	// QueryService.
	stewardv1connect.QueryServiceGetTaskProcedure:            {Group: Read, Plane: "its content (results, requests, plan step results, answers) is blanked and its digests keyed for a caller who may not read the task's content (pkg/content); an approver reads the request it decides", Why: "a task's state is shown to everyone known; its content is not"},
	stewardv1connect.QueryServiceGetActionProcedure:          {Group: Read, Plane: "as GetTask", Why: "as GetTask"},
	stewardv1connect.QueryServiceListTasksProcedure:          {Group: Read, Plane: "as GetTask", Why: "as GetTask"},
	stewardv1connect.QueryServiceGetTimelineProcedure:        {Group: Read, Plane: "as GetTask", Why: "what happened, without the content"},
	stewardv1connect.QueryServiceListBreakersProcedure:       {Group: Read, Plane: "only the global tools' breakers and the caller's tenant's tools'", Why: "which tools' circuit breakers are open"},
	stewardv1connect.QueryServiceGetReceiptProcedure:         {Group: Read, Plane: "as GetTask", Why: "the short record of what happened, without the content"},
	stewardv1connect.QueryServiceGetResultProcedure:          content("a tool's result"),
	stewardv1connect.QueryServiceGetArtifactContentProcedure: content("an artifact's bytes"),
	stewardv1connect.QueryServiceWatchTaskProcedure:          content("raw events carry small results inline"),
	stewardv1connect.QueryServiceListDecisionsProcedure:      content("the decisions' rationale and evidence, and where their context is"),
	stewardv1connect.QueryServiceWhoAmIProcedure:             read("a caller learns its own principal, roles and tenant: the console hides what they may not do"),
	stewardv1connect.QueryServiceGetObjectiveProcedure: {Group: Read, Plane: "only the caller's tenant's objective (another's is not_found); its tasks as ListTasks's summaries, blanked as there",
		Why: "an objective's progress is shown to everyone known, as its tasks' state is"},
	stewardv1connect.QueryServiceListObjectivesProcedure: {Group: Read, Plane: "only the caller's tenant's objectives", Why: "as GetObjective"},
	stewardv1connect.QueryServiceGetTaskTreeProcedure:    {Group: Read, Plane: "the tasks' state, never their content: as GetTask", Why: "as GetTask"},

	// DeadLetterService.
	stewardv1connect.DeadLetterServiceListDeadLettersProcedure: {Group: Operation, Roles: []string{Operator}, Plane: deadLetterTenant,
		Why: "what the planes set aside is the deployment's trouble to look after, with every tenant's events in it"},
	stewardv1connect.DeadLetterServiceReplayDeadLetterProcedure: {Group: Operation, Roles: []string{Operator}, Plane: deadLetterTenant,
		Why: "a replay hands an event to a plane's reactions again: an operator's decision, once the cause is gone"},

	// AuditService.
	stewardv1connect.AuditServiceReplayTaskProcedure: content("raw events carry small results inline"),
	stewardv1connect.AuditServiceVerifyTaskProcedure: read("anyone may check a task's hash chain"),
	stewardv1connect.AuditServiceRecordFindingProcedure: {Group: Operation, Roles: []string{Auditor},
		Why: "findings are an auditor's judgement on the record"},
	stewardv1connect.AuditServiceExportBundleProcedure: {Group: Operation, Roles: []string{Auditor},
		Plane: "the caller's tenant's task; its sub-tasks and ancestors only where the caller may read them (state's mayRead)",
		Why:   "a bundle is a task's whole record, content and policy inputs included, taken away for audit"},
	stewardv1connect.AuditServiceListPolicySnapshotsProcedure: {Group: Operation, Roles: []string{Auditor, Operator},
		Plane: "only the caller's tenant's tasks; another tenant named is not_found",
		Why:   "policy inputs carry the facts of every task: what a canary of a new bundle reads, before it is rolled out"},
}

// objectiveOwner is what the control plane checks besides the table on
// an objective.
const objectiveOwner = "the objective's owner, or an operator, of the caller's tenant (another's is not_found); the same check for a task that names an objective (contract.objective_id)"

// deadLetterTenant is what the state plane checks besides the role on the
// dead-letter RPCs.
const deadLetterTenant = "a caller of the default tenant only: the dead-letter stream holds every tenant's events (docs/dead-letters.md)"

// content is the rule of a read of a task's content, which the state
// plane decides against its projections (the task's parties up its
// delegation, operators and auditors).
func content(what string) Rule {
	return Rule{Group: Read,
		Plane: "a party the task or one it was delegated from names, or the operator or auditor role (state's mayRead)",
		Why:   "it serves the task's content (" + what + "): only its people, operators and auditors read it"}
}

func withWhy(r Rule, why string) Rule { r.Why = why; return r }

func withPlane(r Rule, plane string) Rule { r.Plane = plane; return r }

// For returns the rule of procedure, and false for one without a row.
func For(procedure string) (Rule, bool) {
	r, ok := Table[procedure]
	return r, ok
}
