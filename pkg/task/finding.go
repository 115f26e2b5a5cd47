package task

import (
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// MaxFindings caps the findings one task may hold: an auditor reviews a
// task, and a bound keeps its view small.
const MaxFindings = 256

// findingStep checks an auditor's finding against t and returns the change
// to make; ok is false for other events. A finding comes after the fact,
// so it is the one event an ended task still takes, in any status. Its
// id is unique on the task, its kind known, and the action it names, if
// any, is one of the task's.
func findingStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	p, ok := ev.Payload.(*stewardv1.Event_FindingRecorded)
	if !ok {
		return nil, false, nil
	}
	f := p.FindingRecorded.GetFinding()
	id := t.Contract.GetTaskId()
	switch {
	case f.GetFindingId() == "":
		return nil, true, errs.New(errs.FailedPrecondition, "task %s: a finding has no id", id)
	case f.Kind != stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION:
		return nil, true, errs.New(errs.FailedPrecondition, "task %s: finding %s has kind %v, which is not known", id, f.FindingId, f.Kind)
	case f.ActionId != "" && FindAction(t, f.ActionId) == nil:
		return nil, true, errs.New(errs.FailedPrecondition, "task %s: finding %s names action %s, which the task does not have", id, f.FindingId, f.ActionId)
	case FindFinding(t, f.FindingId) != nil:
		return nil, true, errs.New(errs.FailedPrecondition, "task %s: finding %s was already recorded", id, f.FindingId)
	case len(t.Findings) >= MaxFindings:
		return nil, true, errs.New(errs.FailedPrecondition, "task %s holds %d findings, the most a task may hold", id, MaxFindings)
	}
	return func() {
		f := proto.CloneOf(f)
		// Who and when are the event's: the log says so, not the payload.
		f.RecordedBy, f.RecordedAt = ev.Actor.GetPrincipal(), ev.Time
		t.Findings = append(t.Findings, f)
	}, true, nil
}

// FindFinding returns t's finding with id, or nil.
func FindFinding(t *stewardv1.Task, id string) *stewardv1.Finding {
	for _, f := range t.Findings {
		if f.FindingId == id {
			return f
		}
	}
	return nil
}
