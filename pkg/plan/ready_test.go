package plan_test

import (
	"slices"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
)

func TestReady(t *testing.T) {
	const (
		pending   = stewardv1.StepStatus_STEP_STATUS_PENDING
		running   = stewardv1.StepStatus_STEP_STATUS_RUNNING
		succeeded = stewardv1.StepStatus_STEP_STATUS_SUCCEEDED
		failed    = stewardv1.StepStatus_STEP_STATUS_FAILED
		skipped   = stewardv1.StepStatus_STEP_STATUS_SKIPPED
	)
	tests := []struct {
		name     string
		statuses map[string]stewardv1.StepStatus
		want     []string
	}{
		{"nothing has run: the roots", nil, []string{"fetch"}},
		{"root running", map[string]stewardv1.StepStatus{"fetch": running}, nil},
		{"root done: the diamond's branches and the foreach, in plan order", map[string]stewardv1.StepStatus{"fetch": succeeded}, []string{"check", "notify", "each"}},
		{"a branch running is not ready again", map[string]stewardv1.StepStatus{"fetch": succeeded, "check": running, "notify": pending}, []string{"notify", "each"}},
		{"a skipped branch counts as done", map[string]stewardv1.StepStatus{"fetch": succeeded, "check": succeeded, "notify": skipped, "each": succeeded}, []string{"approve"}},
		{"a failure with continue counts as done", map[string]stewardv1.StepStatus{"fetch": succeeded, "check": succeeded, "notify": failed, "each": succeeded}, []string{"approve"}},
		{"a failure that stops holds its dependents", map[string]stewardv1.StepStatus{"fetch": succeeded, "check": failed, "notify": succeeded, "each": succeeded}, nil},
		{"a failed root holds everything", map[string]stewardv1.StepStatus{"fetch": failed}, nil},
		{"join waits for every branch", map[string]stewardv1.StepStatus{"fetch": succeeded, "check": succeeded, "notify": succeeded, "each": running}, nil},
	}
	p := mustPlan(t, release)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plan.Ready(p, tt.statuses); !slices.Equal(got, tt.want) {
				t.Fatalf("Ready = %v, want %v", got, tt.want)
			}
		})
	}
}
