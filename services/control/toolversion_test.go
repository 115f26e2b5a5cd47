package control_test

import (
	"context"
	"errors"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestProposalTakesTheToolVersionsOfItsTask: the tool versions a task's
// proposals may take are fixed when it is created. A version registered
// after the task — the READ relabel: a new version of an allowed tool that
// says it only reads — is never picked up by a proposal that names no
// version, and naming it is refused; a contract that pins a version gets
// its pin, whenever it was registered, and naming another is refused.
func TestProposalTakesTheToolVersionsOfItsTask(t *testing.T) {
	r := newHarness(t) // write@1 is registered before any task
	ctx := context.Background()
	unpinned := r.runningTask(t, "unpinned", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	req := validRequest("pinned")
	req.Contract.AllowedTools = []string{"write@2", "undo"}
	tk, _, err := r.ctl.CreateTask(ctx, "t", req)
	if err != nil {
		t.Fatal(err)
	}
	pinned := tk.Contract.TaskId
	r.running(pinned)
	if tk := r.task(t, unpinned); tk.CreatedSequence == 0 || tk.CreatedSequence >= tk.LastSequence {
		t.Fatalf("created_sequence %d, last %d: want the TaskCreated's", tk.CreatedSequence, tk.LastSequence)
	}

	// After both tasks, write@2 is registered as a read.
	r.register(t, &stewardv1.ToolContract{Name: "write", Version: "2", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, ParametersSchema: `{"type":"object","required":["text"]}`})

	if a := r.propose(t, unpinned, "p1", "write", "doc", map[string]any{"text": "x"}); a.ToolVersion != "1" ||
		a.EffectClass != stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE {
		t.Errorf("unpinned proposal took write@%s (%s), want write@1, the version of its task", a.ToolVersion, a.EffectClass)
	}
	if a := r.propose(t, pinned, "p1", "write", "doc", map[string]any{"text": "x"}); a.ToolVersion != "2" {
		t.Errorf("pinned proposal took write@%s, want its pin write@2", a.ToolVersion)
	}
	for _, tc := range []struct {
		name, taskID, tool, version, field string
	}{
		{"a version newer than the task", unpinned, "write", "2", "tool_version"},
		{"another version than the pin", pinned, "write", "1", "tool_version"},
		{"a tool the contract does not allow", pinned, "search", "1", "tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := r.last(t)
			_, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{
				TaskId: tc.taskID, ProposalId: "explicit", Tool: tc.tool, ToolVersion: tc.version, Target: "doc"})
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != tc.field {
				t.Fatalf("got %v, want an invalid %s", err, tc.field)
			}
			if r.last(t) != seq {
				t.Errorf("a refused proposal appended events")
			}
		})
	}

	// A task created now takes write@2 unpinned: it was registered before.
	later := r.runningTask(t, "later", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	if a := r.propose(t, later, "p1", "write", "doc", map[string]any{"text": "x"}); a.ToolVersion != "2" {
		t.Errorf("a later task's proposal took write@%s, want write@2", a.ToolVersion)
	}
}
