package execution

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/services/execution/breaker"
)

// settlement is SettleAction's job (settle.go): a person's or a status
// query's word on an action whose outcome is unknown, recorded once and
// compared on a retry. It reaches the plane only to record.
type settlement struct {
	recording
	cfg   Config
	log   *eventlog.Log
	tasks *taskstore.Store
}

// recording is an event recorded on a task while the task, as the write
// finds it, still holds (record.go).
type recording interface {
	recordIf(ctx context.Context, taskID, id string, c cause, payload event.Payload, still func(*stewardv1.Task) bool) error
}

// registration is the tool registry's write side (tools.go, toolnames.go):
// tools registered, the --tools file's at start, and the names no tenant
// may take.
type registration struct {
	cfg    Config
	log    *eventlog.Log
	logger *slog.Logger
	// reserved are the names, lower case, no tenant may register:
	// Config.ReservedTools and the --tools file's (reserve).
	reservedMu sync.RWMutex
	reserved   map[string]struct{}
}

// limits stands between a permit and its call (limits.go, breakers.go):
// the tool's circuit breaker and its limits on calls at once, a call
// held back until a slot frees. It reaches the plane only to wait.
type limits struct {
	waiting
	cfg      Config
	log      *eventlog.Log
	logger   *slog.Logger
	breakers *breaker.Set
	// noGateOnce says once that this plane has no gate for limits.
	noGateOnce sync.Once
}

// waiting is the plane's clock and an action put to wait (call.go).
type waiting interface {
	now() time.Time
	wait(ctx context.Context, taskID string, a *stewardv1.Action, from stewardv1.ActionStatus, c cause, kind stewardv1.WaitKind, until time.Time, reason string) error
}

// waits is an action's waits (waits.go): the timer armed for each, what
// it does when it fires — the next attempt, a held call taken up, a
// status query — and the waits closed when the task ends. It reaches the
// plane only through resuming.
type waits struct {
	resuming
	cfg    Config
	logger *slog.Logger
	tasks  *taskstore.Store
}

// resuming is what a fired timer sets going on the plane: an attempt, a
// held action, a reconciliation.
type resuming interface {
	now() time.Time
	attempt(ctx context.Context, taskID, actionID string, permit *stewardv1.ActionPermit, c cause) error
	hold(ctx context.Context, taskID string, a *stewardv1.Action, c cause) error
	reconcile(ctx context.Context, taskID, actionID string, attempt, check uint32, c cause) error
}
