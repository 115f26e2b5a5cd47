package execution_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// barrier holds each caller until n have come, or until wait has passed,
// then lets them all go; met counts the rounds in which all n came.
type barrier struct {
	n    int
	wait time.Duration
	mu   sync.Mutex
	here int
	open chan struct{}
	met  int
}

func (b *barrier) arrive() {
	b.mu.Lock()
	if b.open == nil {
		b.open = make(chan struct{})
	}
	open := b.open
	b.here++
	if b.here == b.n {
		b.met++
		b.here, b.open = 0, nil
		close(open)
	}
	b.mu.Unlock()
	select {
	case <-open:
	case <-time.After(b.wait):
		b.mu.Lock()
		if b.open == open {
			b.here, b.open = 0, nil
			close(open)
		}
		b.mu.Unlock()
	}
}

func (b *barrier) rounds() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.met
}

// TestRacingWorkersDispatchAPermitOnce: two workers, each on its own
// consumer, see every permit, and both hold back their first dispatch
// until the other is there too, so that they race it for certain. The
// dispatch carries the claim: of the two appends the first wins, the
// other worker reads it and stands down, as after a lost claim. Each
// action is dispatched once, by the worker it names as its holder, with
// no ActionClaimed, and the tool works once; nothing is logged as a fault
// and nothing is set aside.
func TestRacingWorkersDispatchAPermitOnce(t *testing.T) {
	ts := startTool(t)
	b := newHarness(t, breaker.Config{})
	b.register(ts, "charge", false, nil)
	b.plane.Stop()
	var (
		mu   sync.Mutex
		seen []string
	)
	b.logger = slog.New(levels{Handler: stewardtest.Logger(t).Handler(), mu: &mu, seen: &seen})
	_, race := b.racingWorkers()

	const actions = 4
	won := map[string]int{}
	for i := range actions {
		taskID, actionID := b.permit(fmt.Sprintf("t-race-%d", i), "charge", "card-1")
		a := b.WaitAction(taskID, actionID, status(succeededS))
		if n := ts.Executions(a.OpKey); n != 1 {
			t.Errorf("%s: the tool worked %d times, want once", actionID, n)
		}
		if n := b.Count(taskID, event.TypeActionClaimed); n != 0 {
			t.Errorf("%s: %d ActionClaimed; want none, the dispatch carries the claim", actionID, n)
		}
		recs, err := b.Log.Read(context.Background(), taskID)
		if err != nil {
			t.Fatal(err)
		}
		var by []string
		for _, r := range recs {
			if d := r.Event.GetActionDispatched(); d != nil {
				by = append(by, d.Worker)
				if d.PermitId != a.Permit.GetPermitId() || d.Attempt != 1 {
					t.Errorf("%s: dispatched as attempt %d under permit %q; want attempt 1 under %s", actionID, d.Attempt, d.PermitId, a.Permit.GetPermitId())
				}
			}
		}
		if len(by) != 1 || by[0] != a.ClaimedBy {
			t.Errorf("%s: dispatched by %v, held by %q; want one dispatch, by its holder", actionID, by, a.ClaimedBy)
		} else {
			won[by[0]]++
		}
	}
	if got := race.rounds(); got != actions {
		t.Errorf("both workers came to the dispatch together for %d of %d permits; the race was not made", got, actions)
	}
	t.Logf("dispatches won: %v", won)
	b.Settle(execution.PlaneName)
	b.raceWasQuiet(t, &mu, &seen)
}

// TestAPermitIsClaimedFirstWhenSomethingStandsBetween: when a check before
// the call does not pass at once — here the stored request does not hash
// to the permit's hash, so a refusal is to be recorded — the permit is
// claimed on its own, as before, and the refusal follows the claim; no
// dispatch is recorded and the tool hears nothing. On the happy path the
// permit's events in execution are the dispatch and the outcome.
func TestAPermitIsClaimedFirstWhenSomethingStandsBetween(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	b.register(ts, "charge", false, nil)

	happy, happyAction := b.permit("t-happy", "charge", "card-1")
	b.WaitAction(happy, happyAction, status(succeededS))
	if got := executionSteps(t, b, happy); got != "action.dispatched action.outcome" {
		t.Errorf("execution recorded %q for an action with nothing in its way; want the dispatch and the outcome", got)
	}

	const taskID = "t-between"
	b.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"charge"}}}, &stewardv1.TaskStarted{})
	a := b.ProposedAction(taskID, "p1", "charge", "card-2")
	ref, _, err := b.Requests.Put(context.Background(), taskID, []byte(`{"params":{"evil":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	a.RequestRef = ref
	b.Append(taskID, &stewardv1.ActionProposed{Action: a},
		&stewardv1.PolicyEvaluated{ActionId: a.ActionId, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm1", ActionId: a.ActionId, ActionHash: a.ActionHash, RequestHash: a.RequestHash, SnapshotId: "s1"}})
	got := b.WaitAction(taskID, a.ActionId, status(failedS))
	if !strings.Contains(got.Outcome.GetReason(), "does not match the permit") || got.ClaimedBy != "w1" {
		t.Fatalf("outcome %q, held by %q; want refused for the hash, claimed by w1", got.Outcome.GetReason(), got.ClaimedBy)
	}
	if n := b.Count(taskID, event.TypeActionClaimed); n != 1 {
		t.Errorf("%d ActionClaimed; want the permit claimed on its own once", n)
	}
	if n := b.Count(taskID, event.TypeActionDispatched); n != 0 {
		t.Errorf("%d ActionDispatched; want none for a refused request", n)
	}
	if n := ts.Calls(); n != 1 {
		t.Errorf("the tool got %d calls; want only the happy action's", n)
	}
}

// executionSteps lists the types of the execution plane's events on
// taskID's log.
func executionSteps(t *testing.T, b *harness, taskID string) string {
	t.Helper()
	recs, err := b.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range recs {
		if r.Event.GetActor().GetPlane() == execution.PlaneName {
			types = append(types, r.Event.Type)
		}
	}
	return strings.Join(types, " ")
}

// TestALostDispatchGivesItsBreakerProbeBack: both workers' breakers for
// the tool's service are half-open, one probe each, when they race a
// permit. The winner's call closes its breaker; the loser makes no call
// and gives its probe back, so its breaker lets the next call through at
// once rather than after the cool-down.
func TestALostDispatchGivesItsBreakerProbeBack(t *testing.T) {
	ts := startTool(t)
	clock := &stewardtest.Clock{}
	clock.Set(time.Now())
	b := newHarness(t, breaker.Config{MinRequests: 1, FailureRate: 1, CoolDown: time.Hour, HalfOpenProbes: 1})
	b.register(ts, "charge", false, nil)
	b.plane.Stop()
	b.cfg.Now = clock.Now
	w2, race := b.racingWorkers()
	for _, p := range []*execution.Plane{b.plane, w2} {
		p.Breakers().Record("charge", breaker.Failure, clock.Now()) // opens
	}
	clock.Advance(time.Hour) // past the cool-down: the next call is the probe

	taskID, actionID := b.permit("t-probe", "charge", "card-1")
	a := b.WaitAction(taskID, actionID, status(succeededS))
	if race.rounds() != 1 {
		t.Fatal("the workers did not race the dispatch")
	}
	loser := b.plane
	if a.ClaimedBy == "w1" {
		loser = w2
	}
	stewardtest.Eventually(t, 5*time.Second, func() (bool, string) {
		ok, _, _ := loser.Breakers().Allow("charge", clock.Now())
		return ok, "the losing worker's breaker still holds its probe"
	})
}

// racingWorkers starts the harness's worker w1 afresh and a second one, w2, on
// a consumer of its own, both held before each claim at one barrier, so
// that they race every permit. It returns w2 and the barrier.
func (b *harness) racingWorkers() (*execution.Plane, *barrier) {
	b.t.Helper()
	race := &barrier{n: 2, wait: 5 * time.Second}
	b.beforeClaim = race.arrive
	b.start()
	logger := b.logger
	if logger == nil {
		logger = b.Logger
	}
	cfg := b.cfg
	cfg.Worker, cfg.Consumer = "w2", "execution-w2"
	w2, err := execution.New(b.Log, logger, cfg, execution.BeforeClaim(race.arrive))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := w2.Start(context.Background()); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(w2.Stop)
	return w2, race
}
