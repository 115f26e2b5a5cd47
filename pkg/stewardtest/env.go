package stewardtest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stores"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

// Env is what a test of one plane, or of several, stands on: a bus of its
// own and the stores over it, opened by the same wiring as the binary's
// (stores.Open). Planes are the test's to start, over Env's stores.
type Env struct {
	*Bus
	*stores.Set
	// Logger writes to the test's log, shown when it fails.
	Logger *slog.Logger
	tb     testing.TB
}

// NewEnv starts a bus and opens the stores on it; both end with the test.
func NewEnv(tb testing.TB) *Env {
	tb.Helper()
	bus := StartBus(tb)
	logger := Logger(tb)
	set, err := stores.Open(context.Background(), bus.JS, stores.Config{Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(set.Close)
	return &Env{Bus: bus, Set: set, Logger: logger, tb: tb}
}

// Settle waits until the durable consumer named consumer has handled every
// event on the log that it takes (see Bus.Settle).
func (e *Env) Settle(consumers ...string) {
	e.tb.Helper()
	for _, c := range consumers {
		e.Bus.Settle(e.tb, e.Log.Config().Stream, c)
	}
}

// Logger returns a logger that writes to tb's log.
func Logger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{tb}, nil))
}

// testWriter sends a plane's log to the test's, shown when it fails.
type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// WaitTask waits until task taskID, folded from the log, satisfies ok, and
// returns it as it was then.
func (e *Env) WaitTask(taskID string, ok func(*stewardv1.Task) bool) *stewardv1.Task {
	e.tb.Helper()
	var t *stewardv1.Task
	Eventually(e.tb, waitLimit, func() (bool, string) {
		var err error
		if t, _, err = taskstore.Load(context.Background(), e.Log, taskID); err != nil {
			return false, err.Error()
		}
		return ok(t), fmt.Sprintf("task %s is %v", taskID, t.Status)
	})
	return t
}

// WaitAction waits until the action satisfies ok, and returns it as it
// was then.
func (e *Env) WaitAction(taskID, actionID string, ok func(*stewardv1.Action) bool) *stewardv1.Action {
	e.tb.Helper()
	var a *stewardv1.Action
	e.WaitTask(taskID, func(t *stewardv1.Task) bool {
		a = task.FindAction(t, actionID)
		return ok(a)
	})
	return a
}

// Count returns how many of the task's events have type typ.
func (e *Env) Count(taskID, typ string) int {
	e.tb.Helper()
	recs, err := e.Log.Read(context.Background(), taskID)
	if err != nil {
		e.tb.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Event.Type == typ {
			n++
		}
	}
	return n
}

// waitLimit bounds every wait of the kit: long enough for a loaded CI
// machine, short enough that a stuck test says so.
const waitLimit = 30 * time.Second
