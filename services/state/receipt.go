package state

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// GetReceipt builds the task's receipt from one read of its log: the
// events are folded here, with the same fold as the views, rather than
// taken from the projection, so that the receipt and the last event it
// names (sequence, hash, count) come from the same read and cannot
// disagree, even while the task moves on.
func (s *queryService) GetReceipt(ctx context.Context, req *connect.Request[stewardv1.GetReceiptRequest]) (*connect.Response[stewardv1.GetReceiptResponse], error) {
	taskID := req.Msg.TaskId
	if err := checkTaskID(taskID); err != nil {
		return nil, err
	}
	recs, a, err := s.plane.history(ctx, taskID)
	if err != nil {
		return nil, err
	}
	r, err := BuildReceipt(recs)
	if err != nil {
		return nil, err
	}
	who := rpc.Caller(ctx)
	b := s.plane.blindLog(who, taskID)
	if a != nil {
		b = s.plane.blindArchived(ctx, who, a)
	}
	if b != nil {
		b.Receipt(r)
	}
	return connect.NewResponse(&stewardv1.GetReceiptResponse{Receipt: r, Markdown: ReceiptMarkdown(r)}), nil
}

// BuildReceipt folds one task's whole history — its verified records, in
// order, as the log returns them — into the task's receipt. Every line of
// the receipt is something a plane recorded; nothing is taken from what an
// agent says about its own work. A history the fold refuses is Corrupt.
// BuildReceipt is a pure function, safe for concurrent use.
func BuildReceipt(recs []*stewardv1.EventRecord) (*stewardv1.Receipt, error) {
	// Folded here event by event to keep each plan version as it stood
	// when the next replaced it: the task keeps only the one in force.
	t := &stewardv1.Task{}
	var replaced []*stewardv1.PlanState
	for _, rec := range recs {
		if rec.Event.GetPlanSubmitted() != nil && t.Plan != nil {
			replaced = append(replaced, proto.CloneOf(t.Plan))
		}
		if err := task.Apply(t, rec.Event, rec.Sequence); err != nil {
			return nil, errs.Wrap(errs.Corrupt, err, "fold the task's history; run VerifyTask")
		}
	}
	if t.EventCount == 0 {
		return nil, errs.New(errs.NotFound, "no events to build a receipt from")
	}
	k := t.Contract
	r := &stewardv1.Receipt{
		TaskId:         k.GetTaskId(),
		Intent:         k.GetIntent(),
		DesiredOutcome: k.GetDesiredOutcome(),
		InputVersion:   k.GetInputSnapshot().GetVersion(),
		Inputs:         cloneRefs(k.GetInputSnapshot().GetInputs()),
		ContextRefs:    cloneRefs(k.GetContextRefs()),
		Status:         t.Status,
		StatusReason:   t.StatusReason,
		Partial:        partial(t),
		Progress:       proto.CloneOf(t.Progress),
		CreatedAt:      t.CreatedAt,
		UpdatedAt:      t.UpdatedAt,
		LastSequence:   t.LastSequence,
		LastEventHash:  hex.EncodeToString(t.LastHash),
		EventCount:     t.EventCount,
		BudgetUsed: &stewardv1.ReceiptBudget{
			Tokens: t.BudgetUsed.GetTokens(), CostMicros: t.BudgetUsed.GetCostMicros(), Currency: k.GetBudget().GetCurrency(),
		},
	}
	if r.Progress == nil {
		r.Progress = &stewardv1.TaskProgress{}
	}
	if t.CreatedAt != nil && t.UpdatedAt != nil {
		r.Elapsed = durationpb.New(t.UpdatedAt.AsTime().Sub(t.CreatedAt.AsTime()))
	}
	r.Calls, r.ForkedFrom = ownCalls(t), t.ForkedFrom
	h := readHistory(t, recs)
	r.Retries, r.Errors, r.PolicyRevisions = h.retries, h.errors, h.revisions
	var planApprovals map[string]*stewardv1.ReceiptApproval
	r.Plan, planApprovals = receiptPlan(t.Plan, replaced)
	for _, ap := range h.approvals {
		if ap.GetActionId() == "" {
			if a := planApprovals[ap.GetApprovalId()]; a != nil {
				r.Approvals = append(r.Approvals, a)
			}
		} else if a := task.FindAction(t, ap.ActionId); a != nil && a.Approval != nil {
			r.Approvals = append(r.Approvals, receiptApproval(a.Approval))
		}
	}
	for _, a := range t.Artifacts {
		r.Artifacts = append(r.Artifacts, &stewardv1.ReceiptArtifact{
			Name: a.Name, MediaType: a.MediaType, Ref: a.Uri, Hash: a.Sha256, Size: a.SizeBytes, Version: a.Version, ActionId: a.ActionId,
		})
	}
	for _, round := range t.Acceptance {
		r.AcceptanceRounds = append(r.AcceptanceRounds, proto.CloneOf(round))
		for _, c := range round.Checks {
			r.AcceptanceChecks = append(r.AcceptanceChecks, &stewardv1.ReceiptCheck{
				CriterionId: c.CriterionId, Passed: c.Passed, Detail: c.Detail, Round: round.Round,
			})
		}
	}
	r.Credential = receiptCredential(t.Credential)
	for _, f := range t.Findings {
		r.Findings = append(r.Findings, proto.CloneOf(f))
	}
	r.Questions = receiptQuestions(recs)
	receiptDecisions(r, t)
	reportSections(r, t, recs)
	receiptContractVersions(r, t)
	return r, nil
}

// receiptCredential is the credential the task acted under, or nil before
// governance issued one.
func receiptCredential(cs *stewardv1.CredentialState) *stewardv1.ReceiptCredential {
	c := cs.GetCredential()
	if c == nil {
		return nil
	}
	rc := &stewardv1.ReceiptCredential{
		CredentialId: c.CredentialId, Principal: c.Principal, KeyId: c.KeyId, ExpiresAt: c.ExpiresAt,
		Revoked: cs.Revoked, RevokedReason: cs.RevokedReason, Renewals: cs.Renewals,
	}
	for _, link := range cs.Chain {
		if parent, err := task.DecodeCredential(link); err == nil {
			rc.Chain = append(rc.Chain, parent.CredentialId)
		}
	}
	return rc
}

// partial reports whether t's receipt is partial. The rule: a task that
// is not accepted, and either stopped short of its end — failed,
// cancelled, paused, waiting for input, suspended, or compensating (which
// ends as failed or cancelled) — or has actions that failed or are still
// to finish. So a running task whose actions all succeeded is not partial
// (nothing it started is left undone, though it may take more work); the
// same task with one failed action, or one still waiting for approval, is.
func partial(t *stewardv1.Task) bool {
	switch t.Status {
	case stewardv1.TaskStatus_TASK_STATUS_ACCEPTED:
		return false
	case stewardv1.TaskStatus_TASK_STATUS_FAILED,
		stewardv1.TaskStatus_TASK_STATUS_CANCELLED,
		stewardv1.TaskStatus_TASK_STATUS_PAUSED,
		stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT,
		stewardv1.TaskStatus_TASK_STATUS_SUSPENDED,
		stewardv1.TaskStatus_TASK_STATUS_COMPENSATING:
		return true
	}
	return len(t.Progress.GetFailed()) > 0 || len(t.Progress.GetRemaining()) > 0
}

// receiptCall is one ledger entry as the receipt shows it.
func receiptCall(a *stewardv1.Action) *stewardv1.ReceiptCall {
	c := &stewardv1.ReceiptCall{
		ActionId:        a.ActionId,
		Tool:            a.Tool,
		ToolVersion:     a.ToolVersion,
		Target:          a.Target,
		ContractVersion: a.ContractVersion,
		EffectClass:     a.EffectClass,
		Status:          a.Status,
		Attempts:        a.Attempt,
		SnapshotId:      a.Snapshot.GetSnapshotId(),
		PolicyRevision:  a.Snapshot.GetBundleRevision(),
		Decision:        a.Snapshot.GetDecision(),
		SettledBy:       a.SettledBy,
		Compensates:     a.Compensates,
		OpKey:           a.OpKey,
		ProposedAt:      a.ProposedAt,
		AmendedAs:       a.AmendedAs,
		AmendmentOf:     a.AmendmentOf,
		ExecutedBy:      task.Executor(a),
		Evidence:        slices.Clone(a.Outcome.GetEvidence()),
	}
	if ap := a.Approval; task.Approves(ap.GetDecision()) {
		c.ApprovedBy = approvedBy(ap)
	}
	o := a.Outcome
	switch {
	case a.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
		c.ResultRef, c.ResultHash = o.GetResultRef(), o.GetResultHash()
	case a.Status == stewardv1.ActionStatus_ACTION_STATUS_WAITING && a.WaitReason != "":
		c.Reason = a.WaitReason
	case o != nil:
		c.FailureClass, c.Reason = o.FailureClass, o.Reason
	}
	if task.ActionEnded(a.Status) || a.Status == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
		c.FinishedAt = o.GetFinishedAt()
	}
	return c
}

// approvedBy names who approved ap: every approver, in order, when it
// needed several (the last one alone decided_by names).
func approvedBy(ap *stewardv1.Approval) string {
	if approvers := task.Approvers(ap); len(approvers) > 1 {
		return strings.Join(approvers, ", ")
	}
	return ap.DecidedBy
}

func receiptApproval(ap *stewardv1.Approval) *stewardv1.ReceiptApproval {
	decidedBy := ap.DecidedBy
	if task.Approves(ap.Decision) {
		decidedBy = approvedBy(ap)
	}
	return &stewardv1.ReceiptApproval{
		ApprovalId:      ap.ApprovalId,
		ActionId:        ap.ActionId,
		ActionHash:      ap.ActionHash,
		RequiredRoles:   slices.Clone(ap.RequiredRoles),
		Decision:        ap.Decision,
		DecidedBy:       decidedBy,
		Comment:         ap.Comment,
		RequestedAt:     ap.RequestedAt,
		DecidedAt:       ap.DecidedAt,
		PlanVersion:     ap.PlanVersion,
		PlanHash:        ap.PlanHash,
		Withdrawn:       ap.Withdrawn,
		EscalatedTo:     ap.EscalatedTo,
		EscalatedAt:     ap.EscalatedAt,
		AmendedActionId: ap.AmendedActionId,
	}
}

// history is what the receipt needs that the folded task does not keep:
// it keeps each action's last state, the receipt wants the way there.
type history struct {
	retries   uint32
	errors    []string
	revisions []string
	approvals []*stewardv1.Approval // in the order requested, as requested
}

// readHistory walks the task's events in order. t is the task folded from
// the same events, for the tool of each action.
//
//   - retries: dispatches beyond each action's first.
//   - errors: every failure and unknown outcome, in order — failed and
//     unknown outcomes, transient failures that were retried (recorded as
//     a retry wait after a dispatch, not as an outcome), unknown outcomes
//     settled as failed, and plan steps that failed (a revision may have
//     mended them since: the steps show how they stand). Denials and rejections are decisions,
//     not errors; they show in the calls.
//   - revisions: every policy bundle revision that evaluated an action or
//     a plan version, in the order first seen; an action evaluated again
//     after its approval may have met two.
func readHistory(t *stewardv1.Task, recs []*stewardv1.EventRecord) history {
	var h history
	dispatches := map[string]uint32{}
	inFlight := map[string]bool{} // action → its last ledger step was a dispatch
	seen := map[string]bool{}
	who := func(id string) string {
		if a := task.FindAction(t, id); a != nil && a.Tool != "" {
			return fmt.Sprintf("action %s (%s)", id, a.Tool)
		}
		return "action " + id
	}
	for _, rec := range recs {
		switch p := rec.Event.Payload.(type) {
		case *stewardv1.Event_ActionDispatched:
			id := p.ActionDispatched.ActionId
			if dispatches[id]++; dispatches[id] > 1 {
				h.retries++
			}
			inFlight[id] = true
			continue
		case *stewardv1.Event_ActionHeartbeat:
			continue // still the same dispatch
		case *stewardv1.Event_PolicyEvaluated, *stewardv1.Event_ActionPermitted:
			// A snapshot is recorded alone or with the permit it allowed.
			snap := rec.Event.GetPolicyEvaluated().GetSnapshot()
			if snap == nil {
				snap = rec.Event.GetActionPermitted().GetSnapshot()
			}
			if rev := snap.GetBundleRevision(); rev != "" && !seen[rev] {
				seen[rev] = true
				h.revisions = append(h.revisions, rev)
			}
		case *stewardv1.Event_ApprovalRequested:
			h.approvals = append(h.approvals, p.ApprovalRequested.Approval)
		case *stewardv1.Event_PlanEvaluated:
			if rev := p.PlanEvaluated.GetSnapshot().GetBundleRevision(); rev != "" && !seen[rev] {
				seen[rev] = true
				h.revisions = append(h.revisions, rev)
			}
		case *stewardv1.Event_ActionOutcomeRecorded:
			id, o := p.ActionOutcomeRecorded.ActionId, p.ActionOutcomeRecorded.Outcome
			switch o.GetStatus() {
			case stewardv1.ActionStatus_ACTION_STATUS_FAILED:
				h.errors = append(h.errors, withReason(fmt.Sprintf("%s%s failed (%s)", who(id), attempt(o.Attempt), enumWords(o.FailureClass.String(), "FAILURE_CLASS_")), o.Reason))
			case stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN:
				h.errors = append(h.errors, withReason(fmt.Sprintf("%s%s: outcome unknown, the call went out and no answer came back", who(id), attempt(o.Attempt)), o.Reason))
			}
		case *stewardv1.Event_ActionWaiting:
			w := p.ActionWaiting
			if w.Kind == stewardv1.WaitKind_WAIT_KIND_RETRY && inFlight[w.ActionId] {
				h.errors = append(h.errors, withReason(fmt.Sprintf("%s%s failed (transient), retried", who(w.ActionId), attempt(w.NextAttempt-1)), w.Reason))
			}
		case *stewardv1.Event_PlanStepEnded:
			if e := p.PlanStepEnded; e.Status == stewardv1.StepStatus_STEP_STATUS_FAILED {
				h.errors = append(h.errors, withReason(fmt.Sprintf("plan step %s failed (plan version %d)", e.StepId, e.Version), e.Reason))
			}
		case *stewardv1.Event_ActionSettled:
			st := p.ActionSettled
			if st.State == stewardv1.SettleState_SETTLE_STATE_FAILED {
				what := "%s: unknown outcome settled as failed by %s"
				if task.Executor(task.FindAction(t, st.ActionId)) != "" {
					what = "%s: not done, said %s, the person who was to execute it"
				}
				h.errors = append(h.errors, withReason(fmt.Sprintf(what, who(st.ActionId), st.SettledBy), st.Reason))
			}
		}
		if id := actionOf(rec.Event); id != "" {
			inFlight[id] = false
		}
	}
	return h
}

// actionOf returns the action an action event is about, or "".
func actionOf(ev *stewardv1.Event) string {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ActionOutcomeRecorded:
		return p.ActionOutcomeRecorded.ActionId
	case *stewardv1.Event_ActionWaiting:
		return p.ActionWaiting.ActionId
	case *stewardv1.Event_ActionSettled:
		return p.ActionSettled.ActionId
	}
	return ""
}

func attempt(n uint32) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" attempt %d", n)
}

// ownCalls are the receipt's lines of t's calls: its own, not those a
// fork carries from its parent, which are on the parent's receipt.
func ownCalls(t *stewardv1.Task) []*stewardv1.ReceiptCall {
	var calls []*stewardv1.ReceiptCall
	for _, a := range t.Actions {
		if !a.Carried {
			calls = append(calls, receiptCall(a))
		}
	}
	return calls
}
