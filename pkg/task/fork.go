package task

import (
	"strings"

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

// forkFrom starts t, task forkID, from the state its TaskCreated carries.
func forkFrom(t *stewardv1.Task, fork *stewardv1.ForkOrigin, forkID string) {
	proto.Merge(t, fork.GetState())
	for _, a := range t.Actions {
		a.RequestRef = OwnRef(a.RequestRef, fork.GetParentTaskId(), forkID)
		if a.Outcome != nil {
			a.Outcome.ResultRef = OwnRef(a.Outcome.ResultRef, fork.GetParentTaskId(), forkID)
		}
	}
	for _, a := range t.Artifacts {
		a.Uri = OwnRef(a.Uri, fork.GetParentTaskId(), forkID)
	}
	origin := proto.CloneOf(fork)
	origin.State = nil
	t.ForkedFrom = origin
}

// OwnRef is ref, a reference the fork forkID carries from its parent, as
// the fork reads it: content stored under the parent's keys
// (kv://BUCKET/<parent id>.<sha256>, action.ParseRef) is read under the
// fork's own, where the control plane copied it before the fork was
// created (ForkTask), since archiving the parent purges the parent's keys
// while the fork may live on. The state the TaskCreated carries keeps the
// parent's references (an auditor compares it with ForkState). Any other
// reference, the older hash-alone form shared by all tasks included, is
// left as it is.
func OwnRef(ref, parentID, forkID string) string {
	bucket, key, ok := strings.Cut(strings.TrimPrefix(ref, "kv://"), "/")
	if !strings.HasPrefix(ref, "kv://") || !ok || parentID == "" || forkID == "" {
		return ref
	}
	hash, ok := strings.CutPrefix(key, parentID+".")
	if !ok {
		return ref
	}
	return "kv://" + bucket + "/" + forkID + "." + hash
}
