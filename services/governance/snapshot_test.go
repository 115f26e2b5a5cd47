package governance_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance"
)

// TestPolicyIsEvaluatedOnceWhileTheTaskMoves: the task gets another event
// while policy is being evaluated for its proposal. The evaluation runs
// before the conditional write, so the write goes through on the task as
// it is then, with the one snapshot; were it inside the write's build, the
// conflict would run the evaluation again.
func TestPolicyIsEvaluatedOnceWhileTheTaskMoves(t *testing.T) {
	e := newGovEnv(t)
	var (
		evaluations atomic.Int32
		first       sync.Once
		evaluating  = make(chan struct{})
		resume      = make(chan struct{})
	)
	e.onEvaluate = func() {
		evaluations.Add(1)
		first.Do(func() { close(evaluating); <-resume })
	}
	e.start(t, withoutSigner)
	e.create(t, "moving", "user:ana", credContract([]string{"search"}, nil))
	id := e.propose(t, "moving", "s1", "search")
	select {
	case <-evaluating:
	case <-time.After(30 * time.Second):
		close(resume)
		t.Fatal("policy was never evaluated")
	}
	e.Append("moving", &stewardv1.BudgetConsumed{Tokens: 1, Source: "model:x"})
	close(resume)
	e.waitStatus("moving", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.Settle(governance.PlaneName)
	if n := evaluations.Load(); n != 1 {
		t.Errorf("policy was evaluated %d times for one proposal, want once", n)
	}
	if n, _ := e.snapshots(t, "moving"); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
}
