package control

import (
	"fmt"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// A question that nobody answers reminds, escalates to the contract's
// input_backup_ref and suspends its task (docs/input.md, "When nobody
// answers"; task.InputLadderOf). The contract's ladder is checked whole
// when the task is created, and the backup may answer once the question
// was escalated to them.

// checkInputLadder refuses a question ladder that could not climb as the
// contract sets it: a timer out of its range, an escalation with nobody to
// escalate to, a role with no name, or rungs out of order (the reminder,
// then the escalation, then the suspension, defaults counted). Each
// refusal names the field to change.
func checkInputLadder(c *stewardv1.TaskContract) error {
	tm := c.GetTimers()
	for _, err := range []error{
		checkText("contract.input_backup_ref", c.InputBackupRef, MaxRefLen, false),
		limits.Duration("contract.timers.input_remind_after", tm.GetInputRemindAfter(), MinApprovalTimer, MaxApprovalTimer),
		limits.Duration("contract.timers.input_escalate_after", tm.GetInputEscalateAfter(), MinApprovalTimer, MaxApprovalTimer),
		limits.Duration("contract.timers.input_suspend_after", tm.GetInputSuspendAfter(), MinApprovalTimer, MaxApprovalTimer),
	} {
		if err != nil {
			return err
		}
	}
	backup, l := c.InputBackupRef, task.InputLadderOf(c)
	escalateSet, suspendSet := tm.GetInputEscalateAfter().AsDuration() > 0, tm.GetInputSuspendAfter().AsDuration() > 0
	switch {
	case backup == "" && escalateSet:
		return errs.Field("contract.timers.input_escalate_after", "needs contract.input_backup_ref: someone to escalate to")
	case backup == "role:":
		return errs.Field("contract.input_backup_ref", "names no role: \"role:<name>\", or a principal")
	case l.Suspend <= l.Remind && suspendSet:
		return errs.Field("contract.timers.input_suspend_after", "must be longer than input_remind_after (%s unless set)", task.DefaultInputRemindAfter)
	case l.Suspend <= l.Remind:
		return errs.Field("contract.timers.input_remind_after", "must be shorter than input_suspend_after (%s unless set)", task.DefaultInputSuspendAfter)
	case backup != "" && l.Escalate <= l.Remind:
		return errs.Field("contract.timers.input_escalate_after", "must be longer than input_remind_after: whom a question asks are reminded before the backup hears")
	case backup != "" && l.Escalate >= l.Suspend:
		return errs.Field("contract.timers.input_escalate_after", "must be shorter than input_suspend_after: the backup may answer before the task stops")
	}
	return nil
}

// checkInputBackupDuty refuses a question backup who does the task's
// work: its creator, or the delegate of a sub-task. An agent does not
// answer its own questions.
func checkInputBackupDuty(c *stewardv1.TaskContract, creator, delegate string) error {
	switch backup := c.InputBackupRef; {
	case backup == "":
	case backup == creator:
		return errs.Field("contract.input_backup_ref", "%s is creating the task; its agent may not answer its own questions", errs.Quote(backup))
	case backup == delegate:
		return errs.Field("contract.input_backup_ref", "%s is the delegate who does the work; its agent may not answer its own questions", errs.Quote(backup))
	}
	return nil
}

// isInputBackup reports whether who may answer t's open question as the
// backup it was escalated to: the principal named, or a holder of the
// role named; never the task's agent.
func isInputBackup(t *stewardv1.Task, who rpc.Identity) bool {
	if who.Principal == t.CreatedBy || who.Principal == t.Credential.GetCredential().GetPrincipal() {
		return false
	}
	return access.IsBackup(t.OpenInput.GetEscalatedTo(), who.Principal, who.Roles)
}

// notYetBackup says, for a refusal, that who is the question's backup but
// it was not escalated to them yet; "" otherwise.
func notYetBackup(t *stewardv1.Task, who rpc.Identity) string {
	backup := t.Contract.GetInputBackupRef()
	if t.OpenInput.GetEscalatedTo() != "" || !access.IsBackup(backup, who.Principal, who.Roles) {
		return ""
	}
	return fmt.Sprintf("; as its input backup (%s) they may once the question is escalated to them", backup)
}
