package taskstore

import (
	"slices"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// shallowTask returns a new task whose fields are t's: its parts
// (task.Parts) and its bytes are t's own, shared, not copied; only its
// lists are copied, so that neither the fold, which replaces an action
// entry in its list (pkg/task actionChange), nor a caller that changes
// its copy's lists changes the other's. Every field is listed;
// TestShallowTaskCopiesEveryField fails on one left out, and on a list
// (or map) left shared.
func shallowTask(t *stewardv1.Task) *stewardv1.Task {
	c := &stewardv1.Task{
		Contract:              t.Contract,
		Status:                t.Status,
		StatusReason:          t.StatusReason,
		CreatedAt:             t.CreatedAt,
		UpdatedAt:             t.UpdatedAt,
		LastSequence:          t.LastSequence,
		LastHash:              t.LastHash,
		EventCount:            t.EventCount,
		PausedFrom:            t.PausedFrom,
		RequestId:             t.RequestId,
		Actions:               slices.Clone(t.Actions),
		Progress:              t.Progress,
		StalledSince:          t.StalledSince,
		StalledReason:         t.StalledReason,
		FinalStatus:           t.FinalStatus,
		Compensations:         slices.Clone(t.Compensations),
		BudgetUsed:            t.BudgetUsed,
		CreatedBy:             t.CreatedBy,
		Credential:            t.Credential,
		Artifacts:             slices.Clone(t.Artifacts),
		Acceptance:            slices.Clone(t.Acceptance),
		SuspendedFor:          t.SuspendedFor,
		OpenInput:             t.OpenInput,
		Findings:              slices.Clone(t.Findings),
		ActionsGranted:        t.ActionsGranted,
		CreatedSequence:       t.CreatedSequence,
		PausedBy:              t.PausedBy,
		Tenant:                t.Tenant,
		Plan:                  t.Plan,
		Decisions:             slices.Clone(t.Decisions),
		ContextItems:          slices.Clone(t.ContextItems),
		ForkedFrom:            t.ForkedFrom,
		AgentSeenAt:           t.AgentSeenAt,
		AgentAskedAt:          t.AgentAskedAt,
		AgentEscalatedAt:      t.AgentEscalatedAt,
		Milestones:            slices.Clone(t.Milestones),
		CurrentMilestone:      t.CurrentMilestone,
		ContractVersion:       t.ContractVersion,
		ContractHash:          t.ContractHash,
		ContractVersions:      slices.Clone(t.ContractVersions),
		ContractRevisions:     slices.Clone(t.ContractRevisions),
		FallbackEngagements:   slices.Clone(t.FallbackEngagements),
		UndeclaredModelSwaps:  slices.Clone(t.UndeclaredModelSwaps),
		ProducedUnderFallback: t.ProducedUnderFallback,
		ScheduleRun:           t.ScheduleRun,
		RolloutAssignments:    slices.Clone(t.RolloutAssignments),
	}
	if u := t.ProtoReflect().GetUnknown(); len(u) > 0 {
		c.ProtoReflect().SetUnknown(u) // a newer build's fields, kept as a clone keeps them
	}
	return c
}
