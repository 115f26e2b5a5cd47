package notify

import (
	"strings"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestASuspendedQuestionSaysToAnswer: a task suspended because its
// question waited too long keeps the question open, and its answer resumes
// it (docs/input.md); "steward tasks resume" would close the question
// unanswered (and re-ask a plan checkpoint). The act says to answer.
func TestASuspendedQuestionSaysToAnswer(t *testing.T) {
	ev := &stewardv1.Event{TaskId: "t1", Payload: &stewardv1.Event_TaskSuspended{TaskSuspended: &stewardv1.TaskSuspended{
		Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE}}}
	if act := resume(ev); !strings.HasPrefix(act, "steward questions answer t1") {
		t.Fatalf("act %q; want the answer's command", act)
	}
}
