package task

import stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"

// shallowAction returns a new action whose fields are a's: its
// sub-messages, lists and bytes are a's own, shared, not copied. The fold
// changes an action by replacing its entry with such a copy, changed
// (actionChange.step), since views handed out earlier may share the old
// entry; a deep copy cost most of what a step allocates, for an action
// that carries its snapshot, permit and request. Sharing is safe because
// no change to an action changes a sub-message in place: it sets a new
// one (checked in race-detector builds, see raceguard.On). Every field is
// listed; TestShallowActionCopiesEveryField fails on one left out.
func shallowAction(a *stewardv1.Action) *stewardv1.Action {
	c := &stewardv1.Action{
		ActionId:           a.ActionId,
		ProposalId:         a.ProposalId,
		Tool:               a.Tool,
		ToolVersion:        a.ToolVersion,
		Target:             a.Target,
		EffectClass:        a.EffectClass,
		RequestRef:         a.RequestRef,
		RequestHash:        a.RequestHash,
		ActionHash:         a.ActionHash,
		OpKey:              a.OpKey,
		ProposedBy:         a.ProposedBy,
		Status:             a.Status,
		Snapshot:           a.Snapshot,
		Approval:           a.Approval,
		Permit:             a.Permit,
		ClaimedBy:          a.ClaimedBy,
		Outcome:            a.Outcome,
		ProposedAt:         a.ProposedAt,
		UpdatedAt:          a.UpdatedAt,
		EditOf:             a.EditOf,
		Attempt:            a.Attempt,
		RetryPolicy:        a.RetryPolicy,
		WaitKind:           a.WaitKind,
		WaitUntil:          a.WaitUntil,
		WaitReason:         a.WaitReason,
		Compensates:        a.Compensates,
		SettledBy:          a.SettledBy,
		Redispatched:       a.Redispatched,
		LastHeartbeat:      a.LastHeartbeat,
		DispatchedPermitId: a.DispatchedPermitId,
		PermitStale:        a.PermitStale,
		FirstDispatchedAt:  a.FirstDispatchedAt,
		LastRevalidation:   a.LastRevalidation,
		RevalidatedAt:      a.RevalidatedAt,
		Request:            a.Request,
		Rationale:          a.Rationale,
		RetryOf:            a.RetryOf,
		RecoveryAttempt:    a.RecoveryAttempt,
		SignedPermit:       a.SignedPermit,
		SealedSecrets:      a.SealedSecrets,
		PlanStepId:         a.PlanStepId,
		MilestoneId:        a.MilestoneId,
		DecisionId:         a.DecisionId,
		Carried:            a.Carried,
		AmendedAs:          a.AmendedAs,
		AmendmentOf:        a.AmendmentOf,
		SnapshotSigned:     a.SnapshotSigned,
		ContractVersion:    a.ContractVersion,
		RolloutId:          a.RolloutId,
		FallbackOf:         a.FallbackOf,
		FallbackId:         a.FallbackId,
	}
	if u := a.ProtoReflect().GetUnknown(); len(u) > 0 {
		c.ProtoReflect().SetUnknown(u) // a newer build's fields, kept as a clone keeps them
	}
	return c
}
