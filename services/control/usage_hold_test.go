package control

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestCreationReadBeforeDoneCountsOnce: usage's reader may read a task's
// creation between the append and its command's done: the task is then
// in the tallies, and its hold must not count it a second time, or a
// racing create is refused below the quota (TestConcurrentCreatesKeepTheQuota's
// rare failure).
func TestCreationReadBeforeDoneCountsOnce(t *testing.T) {
	u := newUsage(nil, t.Context())
	quotas := Quotas{RunningTasksPerPrincipal: 2}.withDefaults()
	alice := owner{principal: "alice"}
	done, err := u.admit(alice, tally{running: 1}, quotas, "t1")
	if err != nil {
		t.Fatal(err)
	}
	created := &stewardv1.Event{TaskId: "t1", Actor: &stewardv1.Actor{Principal: "alice"},
		Payload: &stewardv1.Event_TaskCreated{TaskCreated: &stewardv1.TaskCreated{}}}
	if err := u.Apply(&stewardv1.EventRecord{Sequence: 7, Event: created}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.admit(alice, tally{running: 1}, quotas, "t2"); err != nil {
		t.Fatalf("a second task under a quota of 2, the first read before its done: %v", err)
	}
	done(7)
	if got := u.held(alice).running; got != 2 {
		t.Errorf("alice holds %d running tasks, want 2", got)
	}
}
