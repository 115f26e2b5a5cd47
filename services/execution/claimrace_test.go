package execution_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// levels remembers every record at warn and above, and passes all on.
type levels struct {
	slog.Handler
	mu   *sync.Mutex
	seen *[]string
}

func (h levels) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.mu.Lock()
		*h.seen = append(*h.seen, r.Level.String()+" "+r.Message)
		h.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h levels) WithAttrs(as []slog.Attr) slog.Handler {
	return levels{Handler: h.Handler.WithAttrs(as), mu: h.mu, seen: h.seen}
}

func (h levels) WithGroup(name string) slog.Handler {
	return levels{Handler: h.Handler.WithGroup(name), mu: h.mu, seen: h.seen}
}

// TestClaimRacingAStopIsAnOrdinaryOutcome: the task stops for input
// between the worker reading it and recording its claim. That is a race
// every busy task can meet, not a fault: nothing is logged at warn or
// error, nothing is set aside, and once a person resumes the task the
// action is claimed and runs once.
func TestClaimRacingAStopIsAnOrdinaryOutcome(t *testing.T) {
	ts := startTool(t)
	b := newHarness(t, breaker.Config{})
	b.plane.Stop()
	var (
		mu   sync.Mutex
		seen []string
	)
	b.Logger = slog.New(levels{Handler: stewardtest.Logger(t).Handler(), mu: &mu, seen: &seen})
	const taskID = "claim-race"
	var once sync.Once
	stopTask := func() {
		ev, err := event.New(event.Meta{TaskID: taskID, Actor: &stewardv1.Actor{Principal: "steward", Plane: "control"}},
			&stewardv1.TaskNeedsInput{Reason: "needs help: the same failure 3 times in a row"})
		if err == nil {
			_, err = b.Tasks.Update(context.Background(), taskID, func(*stewardv1.Task) (*stewardv1.Event, error) { return ev, nil })
		}
		if err != nil {
			t.Errorf("stop the task: %v", err)
		}
	}
	// The first claim finds the task stopped for input first, as when the
	// loop guard reacts to an earlier failure at the same moment: the race
	// is then certain rather than likely.
	b.beforeClaim = func() { once.Do(stopTask) }
	b.start()
	b.register(ts, "net", false, nil)
	_, actionID := b.permit(taskID, "net", "api")

	b.WaitTask(taskID, func(tk *stewardv1.Task) bool {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT
	})
	b.Settle(execution.PlaneName)
	if a := b.WaitAction(taskID, actionID, func(*stewardv1.Action) bool { return true }); a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED {
		t.Fatalf("while the task waits for input the action is %v, want still permitted", a.Status)
	}

	b.Append(taskID, &stewardv1.TaskResumed{Reason: "go on"})
	b.WaitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))
	b.Settle(execution.PlaneName)
	if n := ts.Calls(); n != 1 {
		t.Errorf("the tool was called %d times, want once", n)
	}
	b.raceWasQuiet(t, &mu, &seen)
}

// raceWasQuiet fails t if the race set an event aside on the dead-letter
// stream or was logged as a fault (seen, guarded by mu): losing a race is
// not a fault.
func (b *harness) raceWasQuiet(t *testing.T, mu *sync.Mutex, seen *[]string) {
	t.Helper()
	dead, err := b.Log.DeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		t.Errorf("event %d set aside, want none: %s", d.Sequence, d.Reason)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(*seen) > 0 {
		t.Errorf("the race was logged as a fault:\n%s", strings.Join(*seen, "\n"))
	}
}
