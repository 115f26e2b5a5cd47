package control_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/schedule"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
)

// The schedule tests tick schedules by hand (TickSchedule, as the timer
// would) on the plane's clock moved on by hours: their real timers are an
// hour away and do not fire during a test. TestScheduleTimerFires lets
// the real timer fire.

func hourly(rule stewardv1.CatchUpRule, window time.Duration, policy stewardv1.OverlapPolicy, queue uint32) *stewardv1.CreateScheduleRequest {
	return stewardtest.HourlySchedule(validRequest("").Contract, rule, window, policy, queue)
}

// schedules is a control plane harness with schedule helpers.
type schedules struct {
	*harness
	t *testing.T
}

// newSchedules stops the plane's clock on a whole second, where interval
// firings fall.
func newSchedules(t *testing.T) *schedules {
	r := &schedules{harness: newHarness(t), t: t}
	r.clock.Set(time.Now().Truncate(time.Second))
	return r
}

func (r *schedules) create(req *stewardv1.CreateScheduleRequest) *stewardv1.Schedule {
	r.t.Helper()
	s, _, err := r.ctl.CreateSchedule(context.Background(), "alice", req)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// tick moves the clock on by d and ticks id on the current plane.
func (r *schedules) tick(id string, d time.Duration) *stewardv1.Schedule {
	r.t.Helper()
	r.clock.Advance(d)
	if err := r.ctl.TickSchedule(context.Background(), id); err != nil {
		r.t.Fatal(err)
	}
	return r.get(id)
}

func (r *schedules) get(id string) *stewardv1.Schedule {
	r.t.Helper()
	s, err := r.ctl.GetSchedule(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// restart stops the control plane and starts another over the same log,
// timers and stores, as a process restart does.
func (r *schedules) restart() {
	r.t.Helper()
	r.ctl.Stop()
	r.ctl = control.New(r.Log, r.Logger, r.config())
	r.start(r.t)
}

// firings renders s's firings after its first skip, in hours after
// created: "+2h started", "3 missed +2h..+4h".
func firings(s *stewardv1.Schedule, skip int) string {
	return stewardtest.Firings(s.RecentFirings[skip:], stewardtest.HoursAfter(s.CreatedAt.AsTime()))
}

// TestScheduleCatchUpAcrossRestart: a first run, then the plane stops for
// longer than five intervals; a new plane's tick does what the catch-up
// rule says, and again makes nothing more.
func TestScheduleCatchUpAcrossRestart(t *testing.T) {
	for _, tc := range stewardtest.CatchUpCases() {
		t.Run(tc.Name, func(t *testing.T) {
			r := newSchedules(t)
			s := r.create(hourly(tc.Rule, tc.Window, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0))
			s = r.tick(s.ScheduleId, time.Hour)
			if got := firings(s, 0); got != "+1h started" {
				t.Fatalf("first firing: %s", got)
			}
			if _, err := r.ctl.CancelTask(context.Background(), "alice", &stewardv1.CancelTaskRequest{TaskId: s.LastTaskId}); err != nil {
				t.Fatal(err)
			}
			r.waitRunEnds(s.ScheduleId, 1) // recorded, it moves the sequence no more
			r.restart()
			s = r.tick(s.ScheduleId, 5*time.Hour+20*time.Minute)
			if got := firings(s, 1); got != tc.Want {
				t.Fatalf("after the downtime: %q, want %q", got, tc.Want)
			}
			again := r.tick(s.ScheduleId, 0)
			if again.LastSequence != s.LastSequence || again.RunsStarted != s.RunsStarted {
				t.Fatalf("a second tick recorded more: %s", firings(again, 1))
			}
		})
	}
}

// TestScheduleOverlapAcrossRestart: a run goes on across a restart when
// the next firing comes.
func TestScheduleOverlapAcrossRestart(t *testing.T) {
	none := stewardv1.CatchUpRule_CATCH_UP_RULE_NONE
	for _, tc := range []struct {
		name   string
		policy stewardv1.OverlapPolicy
		want   string
	}{
		{"skip", stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, "+2h skipped"},
		{"queue", stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE, "+2h queued"},
		{"cancel previous", stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS, "+2h cancelled_previous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSchedules(t)
			s := r.create(hourly(none, 0, tc.policy, 0))
			first := r.tick(s.ScheduleId, time.Hour).LastTaskId
			r.running(first)
			r.restart()
			s = r.tick(s.ScheduleId, time.Hour)
			if got := firings(s, 1); got != tc.want {
				t.Fatalf("second firing: %q, want %q", got, tc.want)
			}
			secondAt := s.RecentFirings[1].FiringTime.AsTime()
			second := schedule.RunTaskID(s.ScheduleId, secondAt)
			switch tc.policy {
			case stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP:
				if s.LastTaskId != first || r.exists(second) {
					t.Fatalf("a skipped firing made run %s", s.LastTaskId)
				}
				return
			case stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE:
				// The run's end starts the queued firing (runEnded).
				if _, err := r.ctl.CancelTask(context.Background(), "alice", &stewardv1.CancelTaskRequest{TaskId: first}); err != nil {
					t.Fatal(err)
				}
				stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
					s = r.get(s.ScheduleId)
					return s.LastTaskId == second && len(s.Queued) == 0, firings(s, 0)
				})
			case stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS:
				if got := r.task(t, first).Status; got != stewardv1.TaskStatus_TASK_STATUS_CANCELLED {
					t.Fatalf("the previous run is %s", got)
				}
			}
			recs, err := r.Log.Read(context.Background(), second)
			if err != nil || len(recs) == 0 {
				t.Fatalf("run %s: %v", second, err)
			}
			run := recs[0].Event.GetTaskCreated().GetScheduleRun()
			if run.GetScheduleId() != s.ScheduleId || run.GetPreviousTaskId() != first || !run.GetFiringTime().AsTime().Equal(secondAt) {
				t.Fatalf("the run names %v", run)
			}
		})
	}
}

func (r *schedules) exists(taskID string) bool {
	recs, err := r.Log.Read(context.Background(), taskID)
	if err != nil {
		r.t.Fatal(err)
	}
	return len(recs) > 0
}

// TestSchedulePauseAndDeleteStopFiring: a paused schedule does not fire,
// and on resumption does not catch up what it would have fired; a deleted
// one never fires again.
func TestSchedulePauseAndDeleteStopFiring(t *testing.T) {
	r := newSchedules(t)
	s := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_LAST, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0))
	id := s.ScheduleId
	ctx := context.Background()
	if _, err := r.ctl.PauseSchedule(ctx, "alice", id, "holiday"); err != nil {
		t.Fatal(err)
	}
	if got := r.tick(id, 2*time.Hour+30*time.Minute); len(got.RecentFirings) != 0 || got.NextFiringTime != nil {
		t.Fatalf("a paused schedule fired: %s", firings(got, 0))
	}
	if _, err := r.ctl.ResumeSchedule(ctx, "alice", id, ""); err != nil {
		t.Fatal(err)
	}
	if got := r.tick(id, 0); len(got.RecentFirings) != 0 {
		t.Fatalf("a resumed schedule caught up its pause: %s", firings(got, 0))
	}
	if got := r.tick(id, 30*time.Minute); firings(got, 0) != "+3h started" {
		t.Fatalf("after the resumption: %s", firings(got, 0))
	}
	if _, err := r.ctl.PauseSchedule(ctx, "bob", id, ""); !errs.Is(err, errs.PermissionDenied) {
		t.Fatalf("a stranger's pause: %v", err)
	}
	if _, err := r.ctl.DeleteSchedule(ctx, "alice", id, "done"); err != nil {
		t.Fatal(err)
	}
	recs, err := r.Log.ReadSchedule(ctx, id)
	if err != nil || recs[1].Event.GetSchedulePaused().GetReason() != "holiday" || recs[len(recs)-1].Event.GetScheduleDeleted().GetReason() != "done" {
		t.Fatalf("the reasons are not on the record: %v", err)
	}
	if got := r.tick(id, 5*time.Hour); len(got.RecentFirings) != 1 || got.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_DELETED {
		t.Fatalf("a deleted schedule fired: %s (%s)", firings(got, 0), got.Status)
	}
	if _, err := r.ctl.ResumeSchedule(ctx, "alice", id, ""); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("resuming a deleted schedule: %v", err)
	}
}

// TestScheduleTwoPlanesOneRunPerFiring: two control planes over one
// JetStream tick the same firing at once, again and again: one run, one
// record.
func TestScheduleTwoPlanesOneRunPerFiring(t *testing.T) {
	r := newSchedules(t)
	other := control.New(r.Log, r.Logger, r.config())
	if err := other.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Stop)
	s := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_ALL_WITHIN, 3*time.Hour, stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE, 5))
	r.clock.Advance(3 * time.Hour)
	var wg sync.WaitGroup
	for i := range 8 {
		p := r.ctl
		if i%2 == 1 {
			p = other
		}
		wg.Go(func() {
			if err := p.TickSchedule(context.Background(), s.ScheduleId); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	s = r.get(s.ScheduleId)
	if got := firings(s, 0); got != "+1h started, +2h queued, +3h queued" || s.RunsStarted != 1 {
		t.Fatalf("firings %q, %d runs", got, s.RunsStarted)
	}
	recs, err := r.Log.ReadSchedule(context.Background(), s.ScheduleId)
	if err != nil || len(recs) != 4 {
		t.Fatalf("the schedule's chain has %d events (%v), want its creation and 3 firings", len(recs), err)
	}
}

// TestScheduleTimerFires lets the real timer fire a schedule every
// second, and its run name its schedule and firing.
func TestScheduleTimerFires(t *testing.T) {
	r := &schedules{harness: newHarness(t), t: t} // a running clock
	req := hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS, 0)
	req.Spec.Every = &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Second)}
	s := r.create(req)
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		s = r.get(s.ScheduleId)
		return s.RunsStarted >= 2, firings(s, 0)
	})
	f := s.RecentFirings[0]
	recs, err := r.Log.Read(context.Background(), f.TaskId)
	if err != nil || len(recs) == 0 || f.TaskId != schedule.RunTaskID(s.ScheduleId, f.FiringTime.AsTime()) {
		t.Fatalf("run %s of the first firing: %v", f.TaskId, err)
	}
	if run := recs[0].Event.GetTaskCreated().GetScheduleRun(); run.GetScheduleId() != s.ScheduleId || !run.FiringTime.AsTime().Equal(f.FiringTime.AsTime()) {
		t.Fatalf("the run names %v", run)
	}
}

// TestCreateScheduleChecks: a bad spec or template is refused at
// creation, naming the field; a request id makes the call safe to retry;
// another tenant does not find the schedule.
func TestCreateScheduleChecks(t *testing.T) {
	r := newSchedules(t)
	ctx := context.Background()
	for _, tc := range []struct {
		edit  func(*stewardv1.CreateScheduleRequest)
		field string
	}{
		{func(q *stewardv1.CreateScheduleRequest) { q.Spec = nil }, "spec"},
		{func(q *stewardv1.CreateScheduleRequest) {
			q.Spec.Every = &stewardv1.ScheduleSpec_Cron{Cron: "0 0 30 2 *"}
		}, "spec"},
		{func(q *stewardv1.CreateScheduleRequest) { q.Spec.TimeZone = "Nowhere/Else" }, "spec.time_zone"},
		{func(q *stewardv1.CreateScheduleRequest) { q.Template = nil }, "template.contract"},
		{func(q *stewardv1.CreateScheduleRequest) { q.Template.Contract.Intent = "" }, "template.contract.intent"},
		{func(q *stewardv1.CreateScheduleRequest) { q.Template.Contract.TaskId = "x" }, "template.contract.task_id"},
		{func(q *stewardv1.CreateScheduleRequest) {
			q.Template.Contract.Deadline = timestamppb.New(time.Now().Add(time.Hour))
		}, "template.contract.deadline"},
		{func(q *stewardv1.CreateScheduleRequest) {
			q.CatchUp.Rule = stewardv1.CatchUpRule_CATCH_UP_RULE_ALL_WITHIN
		}, "catch_up.window"},
		{func(q *stewardv1.CreateScheduleRequest) { q.Overlap.QueueLimit = 3 }, "overlap.queue_limit"},
	} {
		req := hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0)
		tc.edit(req)
		_, _, err := r.ctl.CreateSchedule(ctx, "alice", req)
		var e *errs.Error
		if !errs.Is(err, errs.Invalid) || !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("want invalid %s, got %v", tc.field, err)
		}
	}
	req := hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0)
	req.RequestId = "daily-news"
	acme := rpc.WithIdentity(ctx, rpc.Identity{Principal: "alice", Tenant: "acme", Verified: true})
	a, created, err := r.ctl.CreateSchedule(acme, "alice", req)
	if err != nil || !created {
		t.Fatalf("create: %v, %v", created, err)
	}
	b, created, err := r.ctl.CreateSchedule(acme, "alice", req)
	if err != nil || created || b.ScheduleId != a.ScheduleId {
		t.Fatalf("the same request again: %v, %v, %v", b.GetScheduleId(), created, err)
	}
	// A copy: the first request's parts are the log's now (eventlog.Append).
	other := proto.CloneOf(req)
	other.Overlap.Policy = stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS
	if _, _, err := r.ctl.CreateSchedule(acme, "alice", other); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("the request id for another schedule: %v", err)
	}
	if _, _, err := r.ctl.CreateTask(acme, "alice", validRequest("daily-news")); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("the schedule's request id for a task: %v", err)
	}
	if _, err := r.ctl.GetSchedule(ctx, a.ScheduleId); !errs.Is(err, errs.NotFound) {
		t.Fatalf("another tenant's get: %v", err)
	}
	if _, err := r.ctl.PauseSchedule(ctx, "alice", a.ScheduleId, ""); !errs.Is(err, errs.NotFound) {
		t.Fatalf("another tenant's pause: %v", err)
	}
	page, _, err := r.ctl.ListSchedules(acme, &stewardv1.ListSchedulesRequest{})
	if err != nil || len(page) != 1 || page[0].ScheduleId != a.ScheduleId {
		t.Fatalf("acme's list: %v, %v", page, err)
	}
	if page, _, err := r.ctl.ListSchedules(ctx, &stewardv1.ListSchedulesRequest{}); err != nil || len(page) != 0 {
		t.Fatalf("the default tenant's list: %d, %v", len(page), err)
	}
}

// TestListSchedulesPages pages through a tenant's schedules.
func TestListSchedulesPages(t *testing.T) {
	r := newSchedules(t)
	want := map[string]bool{}
	for range 3 {
		want[r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0)).ScheduleId] = true
	}
	ctx := context.Background()
	first, token, err := r.ctl.ListSchedules(ctx, &stewardv1.ListSchedulesRequest{PageSize: 2})
	if err != nil || len(first) != 2 || token == "" {
		t.Fatalf("first page: %d, %q, %v", len(first), token, err)
	}
	rest, token, err := r.ctl.ListSchedules(ctx, &stewardv1.ListSchedulesRequest{PageSize: 2, PageToken: token})
	if err != nil || len(rest) != 1 || token != "" {
		t.Fatalf("second page: %d, %q, %v", len(rest), token, err)
	}
	for _, s := range append(first, rest...) {
		delete(want, s.ScheduleId)
	}
	if len(want) != 0 {
		t.Fatalf("not listed: %v", want)
	}
	for _, bad := range []*stewardv1.ListSchedulesRequest{{PageSize: 1001}, {PageSize: -1}, {PageToken: "not a token!"}} {
		if _, _, err := r.ctl.ListSchedules(ctx, bad); !errs.Is(err, errs.Invalid) {
			t.Errorf("ListSchedules(%v) = %v", bad, err)
		}
	}
}

// TestSchedulePausedBetweenARunAndItsRecord: a pause that lands after a
// firing's run was made and before its record leaves the run recorded on
// the paused schedule, not made and forgotten.
func TestSchedulePausedBetweenARunAndItsRecord(t *testing.T) {
	var r *schedules
	var once sync.Once
	h := newHarness(t, control.AfterRunMade(func(id string) {
		once.Do(func() {
			if _, err := r.ctl.PauseSchedule(context.Background(), "alice", id, "now"); err != nil {
				t.Error(err)
			}
		})
	}))
	r = &schedules{harness: h, t: t}
	r.clock.Set(time.Now().Truncate(time.Second))
	s := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0))
	s = r.tick(s.ScheduleId, time.Hour)
	if s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_PAUSED || firings(s, 0) != "+1h started" || !r.exists(s.LastTaskId) {
		t.Fatalf("%s, firings %q, last run %q", s.Status, firings(s, 0), s.LastTaskId)
	}
}

// TestScheduleRunOfAFiringRecordedOtherwise: when another tick (a second
// replica, or the timer racing the reaction to the previous run's end)
// records the firing SKIPPED between this tick's making its run and its
// record, the run made is not left running with no firing naming it: it
// is cancelled.
func TestScheduleRunOfAFiringRecordedOtherwise(t *testing.T) {
	var r *schedules
	var once sync.Once
	var firing time.Time
	h := newHarness(t, control.AfterRunMade(func(id string) {
		once.Do(func() {
			if err := r.ctl.RecordFiring(context.Background(), id, firing, stewardv1.FiringDisposition_FIRING_DISPOSITION_SKIPPED); err != nil {
				t.Error(err)
			}
		})
	}))
	r = &schedules{harness: h, t: t}
	r.clock.Set(time.Now().Truncate(time.Second))
	s := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0))
	firing = s.CreatedAt.AsTime().Add(time.Hour)
	s = r.tick(s.ScheduleId, time.Hour)
	run := schedule.RunTaskID(s.ScheduleId, firing)
	if firings(s, 0) != "+1h skipped" || s.LastTaskId != "" {
		t.Fatalf("firings %q, last run %q: want the other tick's record", firings(s, 0), s.LastTaskId)
	}
	recs, err := r.Log.Read(context.Background(), run)
	if err != nil || len(recs) == 0 {
		t.Fatalf("run %s: %d events, %v", run, len(recs), err)
	}
	if got := recs[len(recs)-1].Event.Type; got != "task.cancelled" {
		t.Errorf("run %s of a firing recorded skipped ends with %s, want task.cancelled", run, got)
	}
}

// TestAPlaneTicksItsSchedulesWhenItStarts: no timer fires (the first is an
// hour away in real time) and nobody ticks by hand, yet a plane started
// after its clock passed two firings decides them: a start ticks every
// schedule, deciding by the plane's clock. (Pause and deletion across a
// start: e2e's TestSchedulePauseAndDeleteAcrossAKill.)
func TestAPlaneTicksItsSchedulesWhenItStarts(t *testing.T) {
	r := newSchedules(t)
	active := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_LAST, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0))
	r.clock.Advance(2*time.Hour + time.Minute)
	r.restart()
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		got := firings(r.get(active.ScheduleId), 0)
		return got == "1 missed +1h..+1h, +2h started", got
	})
}
