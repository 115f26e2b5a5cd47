package governance

import (
	"log/slog"
	"time"

	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/timer"
)

// clock is governance's job of time: the approval timers that remind
// approvers and suspend a task waiting too long (timers.go), and the
// deadline timers that suspend a task past its deadline (deadline.go), the
// agents' liveness ladders (liveness.go), and the timers that suspend a task
// whose stall mark stands (stall.go).
type clock struct {
	tasks  *taskstore.Store
	logger *slog.Logger
	timers *timer.Timers
	now    func() time.Time
	// notify tells approvers an approval waits (Notifier).
	notify Notifier
}
