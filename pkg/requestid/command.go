package requestid

// The commands that take a request id, one for each RPC with a request_id
// field, named as their RPCs are. A command's name is part of the ids
// derived for it (Scope.EventID, the first use a Claim records), so a name
// is never changed: a command retried across an upgrade must derive what
// its first try did. A new RPC with a request id adds its name here;
// TestCommandNames pins the list and TestEveryRequestIDHasACommand checks
// it against the protos.
const (
	CreateTask      = "CreateTask"
	PauseTask       = "PauseTask"
	ResumeTask      = "ResumeTask"
	CancelTask      = "CancelTask"
	FailTask        = "FailTask"
	ReportUsage     = "ReportUsage"
	RaiseBudget     = "RaiseBudget"
	DelegateTask    = "DelegateTask"
	SubmitPlan      = "SubmitPlan"
	SubmitArtifact  = "SubmitArtifact"
	MarkProduced    = "MarkProduced"
	AcceptTask      = "AcceptTask"
	ReturnTask      = "ReturnTask"
	RequestInput    = "RequestInput"
	ProvideInput    = "ProvideInput"
	ExtendDeadline  = "ExtendDeadline"
	RenewCredential = "RenewCredential"
	RecordFinding   = "RecordFinding"
	ForkTask        = "ForkTask"

	ReviseContract         = "ReviseContract"
	DecideContractRevision = "DecideContractRevision"
	// CreateSchedule derives the schedule's id from its name, the tenant,
	// the caller and the request id; the schedule's chain is its record.
	CreateSchedule  = "CreateSchedule"
	CreateObjective = "CreateObjective"
)

// Commands returns every command that takes a request id, in the order
// declared above.
func Commands() []string {
	return []string{
		CreateTask, PauseTask, ResumeTask, CancelTask, FailTask, ReportUsage, RaiseBudget,
		DelegateTask, SubmitPlan, SubmitArtifact, MarkProduced, AcceptTask, ReturnTask,
		RequestInput, ProvideInput, ExtendDeadline, RenewCredential, RecordFinding, ForkTask,
		ReviseContract, DecideContractRevision,
		CreateSchedule,
		CreateObjective,
	}
}
