package event

// The planes, as events name them in their actor.
const (
	PlaneControl    = "control"
	PlaneGovernance = "governance"
	PlaneExecution  = "execution"
	PlaneState      = "state"
)

// owners names the one plane that may emit each event type (DESIGN, rule
// 3: each plane owns its events, and planes meet only on the log). The
// fold refuses an event whose actor names another plane, or none; the per-plane
// NATS users of a later issue are built from this table.
var owners = map[string]string{
	TypeTaskCreated:         PlaneControl,
	TypeTaskStarted:         PlaneControl,
	TypeTaskPaused:          PlaneControl,
	TypeTaskResumed:         PlaneControl,
	TypeTaskCancelled:       PlaneControl,
	TypeTaskFailed:          PlaneControl,
	TypeTaskCompensating:    PlaneControl,
	TypeTaskNeedsInput:      PlaneControl,
	TypeTaskProduced:        PlaneControl,
	TypeTaskAccepted:        PlaneControl,
	TypeTaskReturned:        PlaneControl,
	TypeActionProposed:      PlaneControl,
	TypeActionWithdrawn:     PlaneControl,
	TypeArtifactSubmitted:   PlaneControl,
	TypeBudgetConsumed:      PlaneControl,
	TypeBudgetRaised:        PlaneControl,
	TypeBudgetReleased:      PlaneControl,
	TypeInputProvided:       PlaneControl,
	TypeDeadlineExtended:    PlaneControl,
	TypePlanSubmitted:       PlaneControl,
	TypePlanStepStarted:     PlaneControl,
	TypePlanStepEnded:       PlaneControl,
	TypeDecisionRecorded:    PlaneControl,
	TypeContextAttached:     PlaneControl,
	TypeAgentHeartbeat:      PlaneControl,
	TypeMilestoneProgressed: PlaneControl,
	TypeFallbackEngaged:     PlaneControl,
	TypeFallbackCleared:     PlaneControl,

	TypeContractRevisionProposed:  PlaneControl,
	TypeContractRevisionDecided:   PlaneControl,
	TypeContractRevisionEvaluated: PlaneGovernance,

	TypeScheduleCreated:           PlaneControl,
	TypeSchedulePaused:            PlaneControl,
	TypeScheduleResumed:           PlaneControl,
	TypeScheduleDeleted:           PlaneControl,
	TypeScheduleFired:             PlaneControl,
	TypeScheduleRunStarted:        PlaneControl,
	TypeScheduleRunEnded:          PlaneControl,
	TypeScheduleCredentialIssued:  PlaneGovernance,
	TypeScheduleCredentialRevoked: PlaneGovernance,

	TypeObjectiveCreated:   PlaneControl,
	TypeObjectiveClosed:    PlaneControl,
	TypeObjectiveTaskAdded: PlaneControl,
	TypeRolloutStarted:     PlaneControl,
	TypeRolloutWidened:     PlaneControl,
	TypeRolloutRolledBack:  PlaneControl,
	TypeRolloutCompleted:   PlaneControl,
	TypeRolloutTaskEnded:   PlaneControl,

	TypePolicyEvaluated:   PlaneGovernance,
	TypeActionDenied:      PlaneGovernance,
	TypeApprovalRequired:  PlaneGovernance,
	TypeApprovalDecided:   PlaneGovernance,
	TypeApprovalReminded:  PlaneGovernance,
	TypeApprovalEscalated: PlaneGovernance,
	TypeActionPermitted:   PlaneGovernance,
	TypeTaskSuspended:     PlaneGovernance,
	TypeBudgetAlerted:     PlaneGovernance,
	TypeCredentialIssued:  PlaneGovernance,
	TypeCredentialRevoked: PlaneGovernance,
	TypePlanEvaluated:     PlaneGovernance,
	TypeAgentAsked:        PlaneGovernance,
	TypeAgentEscalated:    PlaneGovernance,
	TypeInputReminded:     PlaneGovernance,
	TypeInputEscalated:    PlaneGovernance,

	TypeActionClaimed:      PlaneExecution,
	TypeActionDispatched:   PlaneExecution,
	TypeActionOutcome:      PlaneExecution,
	TypeActionWaiting:      PlaneExecution,
	TypeActionSettled:      PlaneExecution,
	TypeActionHeartbeat:    PlaneExecution,
	TypeActionRevalidating: PlaneExecution,
	TypeToolRegistered:     PlaneExecution,
	TypeBreakerChanged:     PlaneExecution,

	TypeTaskStalled:     PlaneState,
	TypeFindingRecorded: PlaneState,
}

// Owner returns the plane that owns events of type typ, or "" for a type
// that is not Steward's.
func Owner(typ string) string { return owners[typ] }

// Types returns every event type.
func Types() []string {
	out := make([]string, 0, len(typeNames))
	for _, t := range typeNames {
		out = append(out, t)
	}
	return out
}
