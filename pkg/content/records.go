package content

import (
	"strings"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Receipt blanks r's content as Task does a task's: a call's result
// reference, plan step results and people's answers; the digests of
// results and artifacts are keyed, and an approval's action hash too
// unless the caller holds a role it asks for. The receipt's last event
// hash is keyed too: an event's hash covers a small result inline, and the
// event's other fields can be told (Task).
func (b Blind) Receipt(r *stewardv1.Receipt) {
	id := r.TaskId
	r.LastEventHash = b.digest(id, r.LastEventHash)
	for _, c := range r.Calls {
		c.ResultRef = ""
		c.ResultHash = b.digest(id, c.ResultHash)
	}
	for _, ap := range r.Approvals {
		if !b.approves(ap.RequiredRoles) {
			ap.ActionHash = b.digest(id, ap.ActionHash)
		}
	}
	for _, a := range r.Artifacts {
		a.Hash = b.digest(id, a.Hash)
		if strings.HasPrefix(a.Ref, StoredPrefix) {
			a.Ref = ""
		}
	}
	if r.Plan != nil {
		b.Steps(r.Plan.Steps...)
		b.Steps(r.Plan.Retired...)
	}
	for _, d := range r.Decisions {
		b.Decision(id, d)
	}
	for _, c := range r.ContextItems {
		b.Context(id, c)
	}
	for _, q := range r.Questions {
		// An answer may be a checkpoint step's result.
		q.Answer = ""
	}
	for _, round := range r.AcceptanceRounds {
		b.Report(round.Report)
	}
	b.Report(r.AgentReport)
}

// Event returns ev, or a copy of it without the content a timeline would
// tell of: a result's reference and hash, an artifact's sha256, an
// approved action's hash and an amendment's parameters (unless the caller
// holds a role the approval asked for — a decided event does not say
// which, so they are hidden from every non-reader), a person's answer (which may be a checkpoint's
// result), the agent's words in an execution report (Report) and on a
// milestone's progress. The digests are hidden rather than keyed: a sentence shows a
// prefix of a hash, and a prefix of a keyed digest says nothing. ev
// itself is never changed: it is the log's record.
func (b Blind) Event(ev *stewardv1.Event) *stewardv1.Event {
	switch ev.Payload.(type) {
	case *stewardv1.Event_ActionOutcomeRecorded, *stewardv1.Event_ArtifactSubmitted, *stewardv1.Event_ApprovalDecided, *stewardv1.Event_InputProvided,
		*stewardv1.Event_TaskProduced, *stewardv1.Event_MilestoneProgressed:
	default:
		return ev
	}
	ev = proto.CloneOf(ev)
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ActionOutcomeRecorded:
		if o := p.ActionOutcomeRecorded.Outcome; o != nil {
			o.Result, o.ResultRef, o.ResultHash = nil, "", ""
		}
	case *stewardv1.Event_ArtifactSubmitted:
		if a := p.ArtifactSubmitted.Artifact; a != nil {
			b.Artifact(ev.TaskId, a)
			a.Sha256 = ""
		}
	case *stewardv1.Event_ApprovalDecided:
		p.ApprovalDecided.ActionHash, p.ApprovalDecided.AmendedParamsJson = "", ""
	case *stewardv1.Event_InputProvided:
		p.InputProvided.Answer = ""
	case *stewardv1.Event_TaskProduced:
		b.Report(p.TaskProduced.Report)
	case *stewardv1.Event_MilestoneProgressed:
		p.MilestoneProgressed.Note = ""
	}
	return ev
}
