package task

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The agent's liveness (docs/liveness.md): Steward cannot tell a busy agent
// from a dead one by the log alone, so a contract may ask it to speak up
// (contract.timers.agent_ask_after). Every event the task's agent causes —
// a command of its own, or a Heartbeat — is its word; the fold keeps when
// it last spoke, and when governance last asked it "still working?" and
// escalated its silence to the owners. An ask or escalation after its last
// word is still open; its next word closes both.

// AgentQuestion is what a silent agent is asked (AgentAsked).
const AgentQuestion = "Still working? The task's agent has said nothing for a while: a Heartbeat, or any command of its own, answers."

// livenessStep checks the agent's liveness events against t.
func livenessStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch ev.Payload.(type) {
	case *stewardv1.Event_AgentAsked:
		if !Working(t.Status) {
			return nil, true, illegal(t, "ask the agent of")
		}
		return func() { t.AgentAskedAt = ev.Time }, true, nil
	case *stewardv1.Event_AgentEscalated:
		if !Working(t.Status) {
			return nil, true, illegal(t, "escalate the agent of")
		}
		return func() { t.AgentEscalatedAt = ev.Time }, true, nil
	case *stewardv1.Event_AgentHeartbeat:
		if Terminal(t.Status) {
			return nil, true, illegal(t, "take a heartbeat for")
		}
		return func() {}, true, nil // the word itself is folded by Apply (heard)
	}
	return nil, false, nil
}

// heard notes ev as the agent's word if the task's agent caused it: its
// creator, or the principal its credential names (a delegate). A task that
// goes back to work — started, resumed, given the input it waited for —
// counts its agent's silence afresh from there, whoever moved it: the
// agent could not act while it was held, and an ask or escalation of
// before is closed. Only a task whose contract watches its agent keeps
// it: every other task, older logs included, folds as it always did.
func heard(t *stewardv1.Task, ev *stewardv1.Event) {
	if t.Contract.GetTimers().GetAgentAskAfter() == nil {
		return
	}
	switch ev.Payload.(type) {
	case *stewardv1.Event_TaskStarted, *stewardv1.Event_TaskResumed, *stewardv1.Event_InputProvided:
		t.AgentSeenAt = ev.Time
		return
	}
	p := ev.GetActor().GetPrincipal()
	if p != "" && (p == t.CreatedBy || p == t.GetCredential().GetCredential().GetPrincipal()) {
		t.AgentSeenAt = ev.Time
	}
}

// AgentAsked reports whether t's agent was asked "still working?" since
// it last spoke, and AgentEscalated whether its silence went to the
// owners since.
func AgentAsked(t *stewardv1.Task) bool { return since(t.AgentAskedAt, t) }

func AgentEscalated(t *stewardv1.Task) bool { return since(t.AgentEscalatedAt, t) }

func since(at *timestamppb.Timestamp, t *stewardv1.Task) bool {
	return at != nil && !at.AsTime().Before(t.AgentSeenAt.AsTime())
}

// AgentSilentFor is how long t's agent has said nothing, at now.
func AgentSilentFor(t *stewardv1.Task, now time.Time) time.Duration {
	return now.Sub(t.AgentSeenAt.AsTime())
}
