// Package event builds, seals and opens the envelopes that make up Steward's
// log. It owns the canonical encoding and the per-task hash chain, so the
// control plane, the state plane and an auditor's offline check agree on
// every byte.
//
// Canonical form: an event is encoded with deterministic protobuf marshalling
// and without its hash field; that is the body. The hash is SHA-256(body),
// and the stored bytes are the body followed by the hash field as a 35-byte
// trailer (tag 99, length 32, hash). prev_hash inside the body links each
// event to the one before it. A verifier in any language hashes the stored
// bytes minus the trailer; it never needs to re-encode anything.
//
// Everything here is a pure function and safe for concurrent use.
package event

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// SchemaVersion is written into every new event. Bump it when the meaning
// of an existing field changes.
const SchemaVersion = 1

// Event type names. They travel in the envelope and in the Steward-Type
// message header, so consumers can skip events without decoding them.
const (
	TypeTaskCreated      = "task.created"
	TypeTaskStarted      = "task.started"
	TypeTaskPaused       = "task.paused"
	TypeTaskResumed      = "task.resumed"
	TypeTaskCancelled    = "task.cancelled"
	TypeTaskFailed       = "task.failed"
	TypeTaskCompensating = "task.compensating"
	TypeTaskNeedsInput   = "task.needs_input"
	TypeTaskSuspended    = "task.suspended"
	TypeTaskStalled      = "task.stalled"
	TypeInputProvided    = "task.input_provided"
	TypeInputReminded    = "task.input_reminded"
	TypeInputEscalated   = "task.input_escalated"
	TypeDeadlineExtended = "task.deadline_extended"
	// TypeMilestoneProgressed is the agent's report on one milestone.
	TypeMilestoneProgressed = "task.milestone_progressed"
	TypeFindingRecorded     = "audit.finding_recorded"
	// TypeFallbackEngaged and TypeFallbackCleared are a declared
	// fallback engaging and the task going back to its primary.
	TypeFallbackEngaged = "task.fallback_engaged"
	TypeFallbackCleared = "task.fallback_cleared"

	TypePlanSubmitted   = "plan.submitted"
	TypePlanEvaluated   = "plan.evaluated"
	TypePlanStepStarted = "plan.step_started"
	TypePlanStepEnded   = "plan.step_ended"

	TypeContractRevisionProposed  = "contract.revision_proposed"
	TypeContractRevisionEvaluated = "contract.revision_evaluated"
	TypeContractRevisionDecided   = "contract.revision_decided"

	TypeDecisionRecorded = "decision.recorded"
	TypeContextAttached  = "context.attached"

	TypeAgentAsked     = "agent.asked"
	TypeAgentEscalated = "agent.escalated"
	TypeAgentHeartbeat = "agent.heartbeat"

	TypeActionProposed     = "action.proposed"
	TypePolicyEvaluated    = "action.policy_evaluated"
	TypeActionDenied       = "action.denied"
	TypeApprovalRequired   = "action.approval_requested"
	TypeApprovalDecided    = "action.approval_decided"
	TypeActionPermitted    = "action.permitted"
	TypeActionClaimed      = "action.claimed"
	TypeActionDispatched   = "action.dispatched"
	TypeActionOutcome      = "action.outcome"
	TypeActionWithdrawn    = "action.withdrawn"
	TypeActionWaiting      = "action.waiting"
	TypeActionSettled      = "action.settled"
	TypeActionHeartbeat    = "action.heartbeat"
	TypeActionRevalidating = "action.revalidating"
	TypeApprovalReminded   = "action.approval_reminded"
	TypeApprovalEscalated  = "action.approval_escalated"
	TypeBudgetConsumed     = "budget.consumed"
	TypeBudgetAlerted      = "budget.alerted"
	TypeBudgetRaised       = "budget.raised"

	TypeCredentialIssued  = "credential.issued"
	TypeCredentialRevoked = "credential.revoked"
	TypeArtifactSubmitted = "artifact.submitted"
	TypeTaskProduced      = "task.produced"
	TypeTaskAccepted      = "task.accepted"
	TypeTaskReturned      = "task.returned"
	TypeBudgetReleased    = "budget.released"

	TypeToolRegistered = "tool.registered"
	TypeBreakerChanged = "service.breaker_changed"

	// A schedule's events live on its own chain (steward.schedule.<id>),
	// chosen by their first token.
	TypeScheduleCreated    = "schedule.created"
	TypeSchedulePaused     = "schedule.paused"
	TypeScheduleResumed    = "schedule.resumed"
	TypeScheduleDeleted    = "schedule.deleted"
	TypeScheduleFired      = "schedule.fired"
	TypeScheduleRunStarted = "schedule.run_started"
	TypeScheduleRunEnded   = "schedule.run_ended"
	// The schedule's own credential, which its runs' are delegated from.
	TypeScheduleCredentialIssued  = "schedule.credential_issued"
	TypeScheduleCredentialRevoked = "schedule.credential_revoked"
	// An objective's events live on its own chain (eventlog.ChainPrefix).
	TypeObjectiveCreated   = "objective.created"
	TypeObjectiveClosed    = "objective.closed"
	TypeObjectiveTaskAdded = "objective.task_added"
	// A rollout's events live on its own chain (steward.rollout.<id>).
	TypeRolloutStarted    = "rollout.started"
	TypeRolloutWidened    = "rollout.widened"
	TypeRolloutRolledBack = "rollout.rolled_back"
	TypeRolloutCompleted  = "rollout.completed"
	TypeRolloutTaskEnded  = "rollout.task_ended"
)

// Payload is one of the event payload messages, such as
// *stewardv1.TaskCreated.
type Payload = proto.Message

// Meta is the envelope data a caller supplies along with a payload.
type Meta struct {
	// ID makes the event deterministic; see ID. Random when empty.
	ID            string
	TaskID        string
	Actor         *stewardv1.Actor
	CausationID   string
	CorrelationID string
	// Time defaults to now.
	Time time.Time
}

// New returns an unsealed event carrying payload. It fails only for a
// payload type that is not an event.
func New(m Meta, payload Payload) (*stewardv1.Event, error) {
	ev := &stewardv1.Event{
		EventId:       m.ID,
		TaskId:        m.TaskID,
		Actor:         m.Actor,
		CausationId:   m.CausationID,
		CorrelationId: m.CorrelationID,
		SchemaVersion: SchemaVersion,
	}
	if ev.EventId == "" {
		ev.EventId = RandomID()
	}
	t := m.Time
	if t.IsZero() {
		t = time.Now()
	}
	ev.Time = timestamppb.New(t.UTC())
	field, ok := payloadFields[payload.ProtoReflect().Descriptor().FullName()]
	if !ok {
		return nil, fmt.Errorf("event: %T is not an event payload", payload)
	}
	ev.ProtoReflect().Set(field, protoreflect.ValueOfMessage(payload.ProtoReflect()))
	ev.Type = TypeOf(ev)
	return ev, nil
}

// typeNames maps each payload field of the envelope to its type name. A new
// event type is one line here and one field in the proto.
var typeNames = map[protoreflect.Name]string{
	"task_created":            TypeTaskCreated,
	"task_started":            TypeTaskStarted,
	"task_paused":             TypeTaskPaused,
	"task_resumed":            TypeTaskResumed,
	"task_cancelled":          TypeTaskCancelled,
	"action_proposed":         TypeActionProposed,
	"policy_evaluated":        TypePolicyEvaluated,
	"action_denied":           TypeActionDenied,
	"approval_requested":      TypeApprovalRequired,
	"approval_decided":        TypeApprovalDecided,
	"action_permitted":        TypeActionPermitted,
	"action_claimed":          TypeActionClaimed,
	"action_dispatched":       TypeActionDispatched,
	"action_outcome_recorded": TypeActionOutcome,
	"action_withdrawn":        TypeActionWithdrawn,
	"task_failed":             TypeTaskFailed,
	"task_compensating":       TypeTaskCompensating,
	"task_needs_input":        TypeTaskNeedsInput,
	"task_suspended":          TypeTaskSuspended,
	"task_stalled":            TypeTaskStalled,
	"action_waiting":          TypeActionWaiting,
	"action_settled":          TypeActionSettled,
	"action_heartbeat":        TypeActionHeartbeat,
	"action_revalidating":     TypeActionRevalidating,
	"approval_reminded":       TypeApprovalReminded,
	"approval_escalated":      TypeApprovalEscalated,
	"budget_consumed":         TypeBudgetConsumed,
	"budget_alerted":          TypeBudgetAlerted,
	"budget_raised":           TypeBudgetRaised,
	"tool_registered":         TypeToolRegistered,
	"breaker_changed":         TypeBreakerChanged,
	"credential_issued":       TypeCredentialIssued,
	"credential_revoked":      TypeCredentialRevoked,
	"artifact_submitted":      TypeArtifactSubmitted,
	"task_produced":           TypeTaskProduced,
	"task_accepted":           TypeTaskAccepted,
	"task_returned":           TypeTaskReturned,
	"budget_released":         TypeBudgetReleased,
	"input_provided":          TypeInputProvided,
	"deadline_extended":       TypeDeadlineExtended,
	"finding_recorded":        TypeFindingRecorded,
	"plan_submitted":          TypePlanSubmitted,
	"plan_evaluated":          TypePlanEvaluated,
	"plan_step_started":       TypePlanStepStarted,
	"plan_step_ended":         TypePlanStepEnded,
	"decision_recorded":       TypeDecisionRecorded,
	"context_attached":        TypeContextAttached,
	"agent_asked":             TypeAgentAsked,
	"agent_escalated":         TypeAgentEscalated,
	"agent_heartbeat":         TypeAgentHeartbeat,
	"input_reminded":          TypeInputReminded,
	"input_escalated":         TypeInputEscalated,
	"milestone_progressed":    TypeMilestoneProgressed,
	"fallback_engaged":        TypeFallbackEngaged,
	"fallback_cleared":        TypeFallbackCleared,

	"contract_revision_proposed":  TypeContractRevisionProposed,
	"contract_revision_evaluated": TypeContractRevisionEvaluated,
	"contract_revision_decided":   TypeContractRevisionDecided,
	"schedule_created":            TypeScheduleCreated,
	"schedule_paused":             TypeSchedulePaused,
	"schedule_resumed":            TypeScheduleResumed,
	"schedule_deleted":            TypeScheduleDeleted,
	"schedule_fired":              TypeScheduleFired,
	"schedule_run_started":        TypeScheduleRunStarted,
	"schedule_run_ended":          TypeScheduleRunEnded,
	"schedule_credential_issued":  TypeScheduleCredentialIssued,
	"schedule_credential_revoked": TypeScheduleCredentialRevoked,
	"objective_created":           TypeObjectiveCreated,
	"objective_closed":            TypeObjectiveClosed,
	"objective_task_added":        TypeObjectiveTaskAdded,
	"rollout_started":             TypeRolloutStarted,
	"rollout_widened":             TypeRolloutWidened,
	"rollout_rolled_back":         TypeRolloutRolledBack,
	"rollout_completed":           TypeRolloutCompleted,
	"rollout_task_ended":          TypeRolloutTaskEnded,
}

// payloadFields maps each payload message to its field in the envelope.
var payloadFields = func() map[protoreflect.FullName]protoreflect.FieldDescriptor {
	out := map[protoreflect.FullName]protoreflect.FieldDescriptor{}
	for i := range payloadOneof.Fields().Len() {
		f := payloadOneof.Fields().Get(i)
		if _, ok := typeNames[f.Name()]; !ok {
			panic("event: payload field " + string(f.Name()) + " has no type name")
		}
		out[f.Message().FullName()] = f
	}
	return out
}()

// TypeOf returns the type name that belongs to ev's payload, or "" for an
// event without a known payload.
func TypeOf(ev *stewardv1.Event) string {
	f := ev.ProtoReflect().WhichOneof(payloadOneof)
	if f == nil {
		return ""
	}
	return typeNames[f.Name()]
}

var payloadOneof = (&stewardv1.Event{}).ProtoReflect().Descriptor().Oneofs().ByName("payload")

// ID derives a deterministic event id from the parts that name its cause,
// such as the causing event's id and the reaction's name. Redelivering the
// cause yields the same id, which the log uses to drop the duplicate.
func ID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// RandomID returns a fresh 128-bit id in hex.
func RandomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms.
	return hex.EncodeToString(b[:])
}

// TypeFor returns the type name of the events whose payload is P, or ""
// when P is not an event payload.
func TypeFor[P Payload]() string {
	var zero P
	f := payloadFields[zero.ProtoReflect().Descriptor().FullName()]
	if f == nil {
		return ""
	}
	return typeNames[f.Name()]
}

// PayloadOf returns ev's payload as a P; ok is false when it is another
// type's.
func PayloadOf[P Payload](ev *stewardv1.Event) (p P, ok bool) {
	m := ev.ProtoReflect()
	f := m.WhichOneof(payloadOneof)
	if f == nil {
		return p, false
	}
	p, ok = m.Get(f).Message().Interface().(P)
	return p, ok
}
