package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

// TestBadLimitsAndTimersAreRefused checks that the loop guards and timers
// of a contract are checked on creation, naming the field, and that
// nothing is appended.
func TestBadLimitsAndTimersAreRefused(t *testing.T) {
	r := idleHarness(t)
	ctl, log := r.ctl, r.Log
	d := durationpb.New
	for _, tc := range []struct {
		name  string
		edit  func(*stewardv1.TaskContract)
		field string
	}{
		{"too many actions", func(c *stewardv1.TaskContract) { c.Limits = &stewardv1.TaskLimits{MaxActions: control.MaxLimit + 1} }, "contract.limits.max_actions"},
		{"negative stall", func(c *stewardv1.TaskContract) { c.Timers = &stewardv1.TaskTimers{StallAfter: d(-time.Second)} }, "contract.timers.stall_after"},
		{"stall shorter than heartbeats", func(c *stewardv1.TaskContract) { c.Timers = &stewardv1.TaskTimers{StallAfter: d(time.Second)} }, "contract.timers.stall_after"},
		{"remind after a nanosecond", func(c *stewardv1.TaskContract) {
			c.Timers = &stewardv1.TaskTimers{ApprovalRemindAfter: d(time.Nanosecond)}
		}, "contract.timers.approval_remind_after"},
		{"remind after 10,000 years", func(c *stewardv1.TaskContract) {
			c.Timers = &stewardv1.TaskTimers{ApprovalRemindAfter: &durationpb.Duration{Seconds: 10_000 * 365 * 24 * 3600}}
		}, "contract.timers.approval_remind_after"},
		{"suspend after a nanosecond", func(c *stewardv1.TaskContract) {
			c.Timers = &stewardv1.TaskTimers{ApprovalSuspendAfter: d(time.Nanosecond)}
		}, "contract.timers.approval_suspend_after"},
		{"suspend past a year", func(c *stewardv1.TaskContract) {
			c.Timers = &stewardv1.TaskTimers{ApprovalSuspendAfter: d(control.MaxApprovalTimer + time.Second)}
		}, "contract.timers.approval_suspend_after"},
		{"stall after a nanosecond", func(c *stewardv1.TaskContract) { c.Timers = &stewardv1.TaskTimers{StallAfter: d(time.Nanosecond)} }, "contract.timers.stall_after"},
		{"stall past its range", func(c *stewardv1.TaskContract) {
			c.Timers = &stewardv1.TaskTimers{StallAfter: d(control.MaxStallAfter + time.Second)}
		}, "contract.timers.stall_after"},
		{"stall suspension after a second", func(c *stewardv1.TaskContract) {
			c.Timers = &stewardv1.TaskTimers{StallSuspendAfter: d(time.Second)}
		}, "contract.timers.stall_suspend_after"},
		{"stall suspension past its range", func(c *stewardv1.TaskContract) {
			c.Timers = &stewardv1.TaskTimers{StallSuspendAfter: d(control.MaxStallAfter + time.Second)}
		}, "contract.timers.stall_suspend_after"},
		{"a duration protobuf cannot hold", func(c *stewardv1.TaskContract) {
			c.Timers = &stewardv1.TaskTimers{StallAfter: &durationpb.Duration{Seconds: 1 << 62}}
		}, "contract.timers.stall_after"},
		{"suspend before remind", func(c *stewardv1.TaskContract) {
			c.Timers = &stewardv1.TaskTimers{ApprovalRemindAfter: d(time.Hour), ApprovalSuspendAfter: d(time.Minute)}
		}, "contract.timers.approval_suspend_after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := validRequest("")
			tc.edit(req.Contract)
			_, _, err := ctl.CreateTask(context.Background(), "t", req)
			if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("got %v, want an invalid %s", err, tc.field)
			}
		})
	}
	if last, err := log.LastTaskSequence(context.Background()); err != nil || last != 0 {
		t.Errorf("the log has %d events (%v); want none", last, err)
	}
	ok := validRequest("fine")
	ok.Contract.Limits = &stewardv1.TaskLimits{MaxActions: 5, MaxSameFailures: 2}
	ok.Contract.Timers = &stewardv1.TaskTimers{ApprovalRemindAfter: d(time.Minute), ApprovalSuspendAfter: d(time.Hour), StallAfter: d(time.Minute)}
	if _, _, err := ctl.CreateTask(context.Background(), "t", ok); err != nil {
		t.Fatalf("a good contract was refused: %v", err)
	}
	// The ends of every range are inside it.
	edges := validRequest("edges")
	edges.Contract.Timers = &stewardv1.TaskTimers{
		ApprovalRemindAfter: d(control.MaxApprovalTimer - time.Hour), ApprovalSuspendAfter: d(control.MaxApprovalTimer), StallAfter: d(control.MaxStallAfter),
	}
	if _, _, err := ctl.CreateTask(context.Background(), "t", edges); err != nil {
		t.Fatalf("timers at the ends of their ranges were refused: %v", err)
	}
}
