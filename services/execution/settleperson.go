package execution

import (
	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// Bounds on a settlement's evidence.
const (
	MaxEvidence    = 16
	MaxEvidenceLen = 1024
)

// checkEvidence refuses evidence past its bounds, or an empty entry.
func checkEvidence(evidence []string) error {
	if len(evidence) > MaxEvidence {
		return &errs.Error{Code: errs.TooLarge, Field: "evidence", Message: "has more than 16 entries"}
	}
	for i, e := range evidence {
		switch {
		case e == "":
			return errs.Field("evidence", "entry %d is empty", i)
		case len(e) > MaxEvidenceLen:
			return &errs.Error{Code: errs.TooLarge, Field: "evidence", Message: "has an entry longer than 1024 bytes"}
		}
	}
	return nil
}

// settleable reports whether an action in s waits for a settlement: its
// outcome unknown, or a person executing it.
func settleable(s stewardv1.ActionStatus) bool {
	return s == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN || s == stewardv1.ActionStatus_ACTION_STATUS_PERSON_EXECUTING
}

// mayFinish says why who may not settle a (nil: none such) as req asks,
// or nil. An action a
// person executes (task.Executor: the approver who answered so, also once
// settled, so that a retry finds its own settlement) is settled by that
// person alone, whatever roles others hold: it says that they did the
// work, which only they can. It is done or not — never "not accepted",
// which is a tool's word — and done takes evidence. Any other action, with
// tokens, is settled by an operator: what happened in the world is not for
// the agent whose action it was to say.
func mayFinish(a *stewardv1.Action, who rpc.Identity, req *stewardv1.SettleActionRequest) error {
	by := task.Executor(a)
	switch {
	case by == "":
		if who.Verified && !who.HasRole(access.Operator) {
			return errs.New(errs.PermissionDenied, "%s may not settle action %s: settling an unknown outcome needs the operator role", who.Principal, req.ActionId)
		}
		return nil
	case who.Principal != by:
		return errs.New(errs.PermissionDenied, "%s may not settle action %s: %s answered that they execute it, and only they say whether they did", who.Principal, req.ActionId, by)
	case req.State == stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED:
		return errs.Field("state", "must be SETTLE_STATE_SUCCEEDED or SETTLE_STATE_FAILED for an action a person executes: done, or not")
	case req.State == stewardv1.SettleState_SETTLE_STATE_SUCCEEDED && len(req.Evidence) == 0:
		return errs.Field("evidence", "is required to settle a person's execution as succeeded: what shows the work done (a ticket, a URL, a document)")
	}
	return nil
}
