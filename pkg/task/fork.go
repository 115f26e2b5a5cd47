package task

import (
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Forks (docs/decisions.md, "Forks"): recomputing from a point is a new
// task, never a branch mixed into the old history. The fork starts from
// its parent's state at the point, carried in its TaskCreated, so that it
// copies no events; ForkState says what of that state carries over, and
// an auditor computes it again from the parent's events to check the link.

// ForkState is the state a fork of parent starts from, parent being the
// task as folded up to the fork point: its ledger, decisions, context,
// artifacts and acceptance rounds, as they were. What does not carry
// over is left out: the task's own identity and chain (the fork has its
// own contract, status, times and events), its spending (the fork's
// budget is its own), its credential (governance issues the fork one),
// its plan (the fork's agent writes its own), an open question, a pause,
// a stall, a compensation under way, auditors' findings; and every action
// that had not ended is withdrawn, with no permit or approval: nothing
// open at the point runs in the fork. Each action is marked carried: the
// fork never compensates, retries or counts one as its own.
func ForkState(parent *stewardv1.Task) *stewardv1.Task {
	s := &stewardv1.Task{
		Actions:      cloneAll(parent.Actions),
		Artifacts:    cloneAll(parent.Artifacts),
		Acceptance:   cloneAll(parent.Acceptance),
		Decisions:    cloneAll(parent.Decisions),
		ContextItems: cloneAll(parent.ContextItems),
	}
	for _, d := range s.Decisions {
		d.Carried = true
	}
	for _, a := range s.Actions {
		a.Carried = true
		if !ActionEnded(a.Status) {
			a.Status = withdrawn
			a.Permit, a.SignedPermit, a.Approval, a.PermitStale = nil, nil, nil, false
			clearWait(a)
		}
	}
	followProgress(s)
	return s
}

func cloneAll[M proto.Message](ms []M) []M {
	out := make([]M, 0, len(ms))
	for _, m := range ms {
		out = append(out, proto.CloneOf(m))
	}
	return out
}

// forkFrom starts t, a new task, from the state its TaskCreated carries.
func forkFrom(t *stewardv1.Task, fork *stewardv1.ForkOrigin) {
	proto.Merge(t, fork.GetState())
	origin := proto.CloneOf(fork)
	origin.State = nil
	t.ForkedFrom = origin
}
