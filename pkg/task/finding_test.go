package task_test

import (
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

func finding(id, actionID string, kind stewardv1.FindingKind) event.Payload {
	return &stewardv1.FindingRecorded{Finding: &stewardv1.Finding{FindingId: id, Kind: kind, ActionId: actionID, Description: "wired without a ticket"}}
}

// TestFoldRecordsFindings: a finding is taken in any status, an ended task
// included, and stamped with who recorded it; a repeated id, an unknown
// kind or an action the task does not have is refused.
func TestFoldRecordsFindings(t *testing.T) {
	violation := stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION
	proposedA1 := &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", Tool: "wire", ActionHash: "h", RequestHash: "r"}}
	tests := []struct {
		name    string
		events  []event.Payload
		want    int
		illegal bool
	}{
		{"on a running task", []event.Payload{created(), started(), finding("f1", "", violation)}, 1, false},
		{"on a cancelled task", []event.Payload{created(), started(), cancelled(), finding("f1", "", violation), finding("f2", "", violation)}, 2, false},
		{"about one of its actions", []event.Payload{created(), started(), proposedA1, cancelled(), finding("f1", "a1", violation)}, 1, false},
		{"about an action it does not have", []event.Payload{created(), started(), finding("f1", "a9", violation)}, 0, true},
		{"of no kind", []event.Payload{created(), started(), finding("f1", "", stewardv1.FindingKind_FINDING_KIND_UNSPECIFIED)}, 0, true},
		{"with no id", []event.Payload{created(), started(), finding("", "", violation)}, 0, true},
		{"twice under one id", []event.Payload{created(), started(), finding("f1", "", violation), finding("f1", "", violation)}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := task.Fold(stewardtest.History(t, "t1", tt.events...))
			if tt.illegal {
				if !errs.Is(err, errs.FailedPrecondition) {
					t.Fatalf("err = %v, want a failed precondition", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Findings) != tt.want {
				t.Fatalf("findings = %v, want %d", got.Findings, tt.want)
			}
			f := got.Findings[0]
			if f.RecordedBy != stewardtest.Principal || f.RecordedAt == nil || task.FindFinding(got, f.FindingId) != f {
				t.Fatalf("finding not stamped by the event: %v", f)
			}
		})
	}
}

// TestFindingIsNotProgress: a finding on a stalled task leaves the stall
// mark, which only progress clears.
func TestFindingIsNotProgress(t *testing.T) {
	history := stewardtest.History(t, "t1", created(), started(), &stewardv1.TaskStalled{Reason: "quiet"},
		finding("f1", "", stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION))
	got, err := task.Fold(history)
	if err != nil {
		t.Fatal(err)
	}
	if got.StalledSince == nil || got.StalledReason != "quiet" {
		t.Fatalf("the finding cleared the stall mark: %v %q", got.StalledSince, got.StalledReason)
	}
	before, err := task.Fold(history[:len(history)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !got.UpdatedAt.AsTime().Equal(before.UpdatedAt.AsTime()) || got.EventCount != before.EventCount+1 {
		t.Errorf("the finding moved updated_at from %v to %v (events %d → %d): a note is not a change",
			before.UpdatedAt.AsTime(), got.UpdatedAt.AsTime(), before.EventCount, got.EventCount)
	}
}
