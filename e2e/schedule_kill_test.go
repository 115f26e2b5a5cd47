package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/schedule"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// Schedules across a kill -9 under an injected clock. The child is the
// real binary built with the tag stewardtestclock: its planes' one clock
// (cmd/steward/app processClock) reads the time from a file the test
// writes (testClockEnv). It is chosen over re-executing the test binary
// with the all-in-one wiring because what is killed is then the binary
// that ships, embedded NATS and its file store with it, but for that one
// function; an ordinary build has no hook (TestTheShippedBinaryHasNoTestClock,
// and cmd/steward/app's TestAnOrdinaryBuildHasNoTestClock).
//
// Timers fire by the NATS server's real clock, the planes decide by the
// injected one. A firing whose fake time is in the real past has its timer
// fire at once, and its tick decides at the timer's time (the timer is a
// clock too, services/control/schedule_fire.go): the tests let the first
// firing run so, and put every later one in the real future, where its
// timer does not fire during the test — were they in the real past too,
// each firing's timer would bring the next at once, up to the real now. A
// child ticks its schedules when it starts (schedule_start.go): at the
// injected time, after the kill. The last fired timer may come again too
// (its ack lost with the kill), deciding at the same time: either way one
// record and one run per firing. The tagged build costs ~9 s once per run
// of the package (a warm cache; ~18 s cold), each child's start under 1 s.

// testClockEnv is cmd/steward/app.TestClockEnv, which only the tagged
// build has.
const testClockEnv = "STEWARD_TEST_CLOCK_FILE"

// clockBuild is the tagged binary, built once when a test needs it.
type clockBuild struct {
	path string
	took time.Duration
}

var buildClocked = sync.OnceValues(func() (clockBuild, error) {
	start := time.Now()
	b := clockBuild{path: filepath.Join(buildDir, "steward-testclock")}
	out, err := exec.Command("go", "build", "-tags", "stewardtestclock", "-o", b.path, "../cmd/steward").CombinedOutput()
	if err != nil {
		return b, fmt.Errorf("build steward -tags stewardtestclock: %v\n%s", err, out)
	}
	b.took = time.Since(start)
	return b, nil
})

// clocked is `steward dev` of the tagged binary over one data directory,
// under a clock the test sets, with clients that call as user:ana.
type clocked struct {
	t               *testing.T
	bin, data, file string
	args            []string
	p               *proc
	clients
	schedules stewardv1connect.ScheduleServiceClient
}

// startClocked starts a child of `steward dev`, with flags, at at.
func startClocked(t *testing.T, at time.Time, flags ...string) *clocked {
	t.Helper()
	b, err := buildClocked()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the tagged binary took %s to build (once per run)", b.took.Round(time.Millisecond))
	dir := t.TempDir()
	c := &clocked{t: t, bin: b.path, data: filepath.Join(dir, "data"), file: filepath.Join(dir, "clock")}
	c.args = append([]string{"dev", "--addr", "127.0.0.1:0", "--data", c.data, "--log-level", "warn", "--insecure"}, flags...)
	c.set(at)
	c.start()
	return c
}

// set sets the clock of c and every child that shares it to at.
func (c *clocked) set(at time.Time) {
	c.t.Helper()
	tmp := c.file + ".new"
	if err := os.WriteFile(tmp, []byte(at.Format(time.RFC3339Nano)), 0o600); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, c.file); err != nil { // never half a time
		c.t.Fatal(err)
	}
}

// start starts the binary with c's arguments (over its data).
func (c *clocked) start() { startTogether(c) }

// startTogether starts the children cs at once, then waits until each
// serves: their starts, and their start ticks, overlap.
func startTogether(cs ...*clocked) {
	serving := make([]<-chan string, len(cs))
	for i, c := range cs {
		c.t.Helper()
		c.p, serving[i] = spawnCommand(c.t, c.bin, []string{testClockEnv + "=" + c.file}, c.args...)
	}
	for i, c := range cs {
		c.p.waitServing(c.t, serving[i])
		opt := connect.WithInterceptors(asPrincipal("user:ana"))
		c.clients = newClients(c.p.url, opt)
		c.schedules = stewardv1connect.NewScheduleServiceClient(&http.Client{Timeout: 30 * time.Second}, c.p.url, opt)
	}
}

// sibling is a second child of the tagged binary with args, under c's
// clock; it is not started.
func (c *clocked) sibling(args ...string) *clocked {
	return &clocked{t: c.t, bin: c.bin, file: c.file, args: args}
}

// killAt kills the child (SIGKILL), moves the clock to at and starts it
// again over the same data.
func (c *clocked) killAt(at time.Time) {
	c.t.Helper()
	c.p.kill()
	c.set(at)
	c.start()
}

func (c *clocked) create(req *stewardv1.CreateScheduleRequest) *stewardv1.Schedule {
	c.t.Helper()
	if req.Template == nil {
		req.Template = &stewardv1.ScheduleTemplate{Contract: contract()}
	}
	resp, err := c.schedules.CreateSchedule(context.Background(), connect.NewRequest(req))
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.Msg.Schedule
}

func (c *clocked) get(id string) *stewardv1.Schedule {
	c.t.Helper()
	resp, err := c.schedules.GetSchedule(context.Background(), connect.NewRequest(&stewardv1.GetScheduleRequest{ScheduleId: id}))
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.Msg.Schedule
}

// waitFirings waits until schedule id's firings, rendered by render, are
// want, and returns the schedule.
func (c *clocked) waitFirings(id, want string, render func(time.Time) string) *stewardv1.Schedule {
	c.t.Helper()
	var s *stewardv1.Schedule
	stewardtest.Eventually(c.t, 30*time.Second, func() (bool, string) {
		s = c.get(id)
		got := firingsOf(s, render)
		return got == want, fmt.Sprintf("firings %q, want %q", got, want)
	})
	return s
}

func (c *clocked) cancel(taskID string) {
	c.t.Helper()
	if _, err := c.tasks.CancelTask(context.Background(), connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: taskID, Reason: "the test ends it"})); err != nil {
		c.t.Fatal(err)
	}
}

func (c *clocked) status(taskID string) stewardv1.TaskStatus {
	c.t.Helper()
	resp, err := c.query.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.Msg.Task.Status
}

// oneTaskPerRun checks that the child's tasks are exactly the runs that
// schedules' firings name, each under the id derived from its firing.
func (c *clocked) oneTaskPerRun(ss ...*stewardv1.Schedule) {
	c.t.Helper()
	runs := map[string]bool{}
	for _, s := range ss {
		for _, f := range s.RecentFirings {
			if f.TaskId == "" {
				continue
			}
			if f.TaskId != schedule.RunTaskID(s.ScheduleId, f.FiringTime.AsTime()) || runs[f.TaskId] {
				c.t.Fatalf("firing %s of %s ran as %s", f.FiringTime.AsTime(), s.ScheduleId, f.TaskId)
			}
			runs[f.TaskId] = true
		}
	}
	list, err := c.query.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{}))
	if err != nil {
		c.t.Fatal(err)
	}
	for _, tk := range list.Msg.Tasks {
		if !runs[tk.Contract.TaskId] {
			c.t.Errorf("task %s is no recorded firing's run", tk.Contract.TaskId)
		}
	}
	if len(list.Msg.Tasks) != len(runs) {
		c.t.Errorf("%d tasks for %d runs", len(list.Msg.Tasks), len(runs))
	}
}

// asPrincipal names the caller in the open mode.
func asPrincipal(p string) connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set(rpc.PrincipalHeader, p)
			return next(ctx, req)
		}
	})
}

// hourly is the request of an hourly schedule of contract() under rules.
func hourly(rule stewardv1.CatchUpRule, window time.Duration, policy stewardv1.OverlapPolicy, queue uint32) *stewardv1.CreateScheduleRequest {
	return stewardtest.HourlySchedule(contract(), rule, window, policy, queue)
}

// firingsOf renders s's firings, their times by at.
func firingsOf(s *stewardv1.Schedule, at func(time.Time) string) string {
	return stewardtest.Firings(s.RecentFirings, at)
}

// firstRunByTimer is where a child's clock starts for an hourly schedule
// whose first firing's timer fires at once (in the real past) and whose
// second is in the real future (30 minutes from now): what firings there
// are after a kill are the restart's.
func firstRunByTimer() time.Time { return time.Now().Truncate(time.Second).Add(-90 * time.Minute) }

// startFirstRun creates req's hourly schedule at t0 and waits for its first
// firing's run, brought by its timer while the clock stands still at t0.
func (c *clocked) startFirstRun(req *stewardv1.CreateScheduleRequest) *stewardv1.Schedule {
	c.t.Helper()
	s := c.create(req)
	return c.waitFirings(s.ScheduleId, "+1h started", stewardtest.HoursAfter(s.CreatedAt.AsTime()))
}

// TestTheShippedBinaryHasNoTestClock: the binary the other tests build,
// the one that ships, does not name the variable that sets the test
// clock; the tagged one does.
func TestTheShippedBinaryHasNoTestClock(t *testing.T) {
	tagged, err := buildClocked()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		names bool
	}{{binary, false}, {tagged.path, true}} {
		b, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(testClockEnv)) != tc.names {
			t.Errorf("%s names %s: %t, want %t", tc.path, testClockEnv, !tc.names, tc.names)
		}
	}
}

// TestScheduleOverlapAcrossAKill: a run goes on across a kill -9 and a
// downtime of three intervals; with a catch-up of all within 4h each
// firing missed is decided by the overlap policy at the restart, and the
// runs are as the policy says: none more for skip; two queued, then
// started each as the run before it ends, for a queue of 2; for
// cancel_previous the newest firing's run, the first cancelled.
func TestScheduleOverlapAcrossAKill(t *testing.T) {
	all := stewardv1.CatchUpRule_CATCH_UP_RULE_ALL_WITHIN
	for _, tc := range []struct {
		name   string
		policy stewardv1.OverlapPolicy
		queue  uint32
		want   string
	}{
		{"skip", stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0, "+1h started, +2h skipped, +3h skipped, +4h skipped"},
		{"queue 2", stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE, 2, "+1h started, +2h queued, +3h queued, +4h skipped"},
		// Within one catch-up only the newest starts (docs/schedules.md).
		{"cancel previous", stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS, 0, "+1h started, +2h skipped, +3h skipped, +4h cancelled_previous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := firstRunByTimer()
			c := startClocked(t, t0)
			s := c.startFirstRun(hourly(all, 4*time.Hour, tc.policy, tc.queue))
			id, first := s.ScheduleId, s.LastTaskId
			c.killAt(t0.Add(4*time.Hour + 20*time.Minute))
			s = c.waitFirings(id, tc.want, stewardtest.HoursAfter(t0))
			run := func(h int) string { return schedule.RunTaskID(id, t0.Add(time.Duration(h)*time.Hour)) }
			switch tc.policy {
			case stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP:
				if s.LastTaskId != first || c.status(first) != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
					t.Fatalf("the run after skips: %s, %s", s.LastTaskId, c.status(first))
				}
			case stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE:
				// Each run's end starts the next queued firing.
				for h := 2; h <= 3; h++ {
					c.cancel(s.LastTaskId)
					stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
						s = c.get(id)
						return s.LastTaskId == run(h), fmt.Sprintf("after the run of +%dh ended the last run is %s", h-1, s.LastTaskId)
					})
				}
				if len(s.Queued) != 0 || s.RunsStarted != 3 {
					t.Fatalf("queued %v, %d runs", s.Queued, s.RunsStarted)
				}
			case stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS:
				if got := c.status(first); got != stewardv1.TaskStatus_TASK_STATUS_CANCELLED {
					t.Errorf("the first run is %s, not cancelled by the +4h one", got)
				}
				if f := s.RecentFirings[3]; f.CancelledTaskId != first {
					t.Errorf("the +4h firing names %q as cancelled", f.CancelledTaskId)
				}
				if s.LastTaskId != run(4) || c.status(run(4)) != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
					t.Fatalf("the last run %s is %s", s.LastTaskId, c.status(run(4)))
				}
			}
			c.oneTaskPerRun(s)
		})
	}
}

// TestScheduleCatchUpAcrossAKill: the first run ends, the child is killed
// and stays down five intervals and more; at the restart each catch-up
// rule records the firings missed and starts those it says.
func TestScheduleCatchUpAcrossAKill(t *testing.T) {
	skip := stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP
	for _, tc := range stewardtest.CatchUpCases() {
		t.Run(tc.Name, func(t *testing.T) {
			t0 := firstRunByTimer()
			c := startClocked(t, t0)
			s := c.startFirstRun(hourly(tc.Rule, tc.Window, skip, 0))
			c.cancel(s.LastTaskId)
			c.killAt(t0.Add(6*time.Hour + 20*time.Minute))
			s = c.waitFirings(s.ScheduleId, "+1h started, "+tc.Want, stewardtest.HoursAfter(t0))
			c.oneTaskPerRun(s)
		})
	}
}

// TestSchedulePauseAndDeleteAcrossAKill: a schedule paused and one deleted
// before a kill make no run after the restart, three intervals later,
// while a schedule left active catches up; resumed, the paused one does
// not catch up what it missed while paused.
func TestSchedulePauseAndDeleteAcrossAKill(t *testing.T) {
	last := stewardv1.CatchUpRule_CATCH_UP_RULE_LAST
	skip := stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP
	t0 := firstRunByTimer()
	c := startClocked(t, t0)
	paused := c.startFirstRun(hourly(last, 0, skip, 0))
	deleted := c.startFirstRun(hourly(last, 0, skip, 0))
	ctx := context.Background()
	if _, err := c.schedules.PauseSchedule(ctx, connect.NewRequest(&stewardv1.PauseScheduleRequest{ScheduleId: paused.ScheduleId})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.schedules.DeleteSchedule(ctx, connect.NewRequest(&stewardv1.DeleteScheduleRequest{ScheduleId: deleted.ScheduleId})); err != nil {
		t.Fatal(err)
	}
	// The restart ticks schedules in id order: once a witness with a
	// later id than both has caught up, their ticks are done.
	var witness *stewardv1.Schedule
	for witness == nil || witness.ScheduleId < max(paused.ScheduleId, deleted.ScheduleId) {
		witness = c.startFirstRun(hourly(last, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS, 0))
	}
	c.killAt(t0.Add(3*time.Hour + 20*time.Minute))
	c.waitFirings(witness.ScheduleId, "+1h started, 1 missed +2h..+2h, +3h cancelled_previous", stewardtest.HoursAfter(t0))
	for _, s := range []*stewardv1.Schedule{paused, deleted} {
		if got := firingsOf(c.get(s.ScheduleId), stewardtest.HoursAfter(t0)); got != "+1h started" {
			t.Errorf("schedule %s fired after the restart: %s", s.ScheduleId, got)
		}
	}
	resp, err := c.schedules.ResumeSchedule(ctx, connect.NewRequest(&stewardv1.ResumeScheduleRequest{ScheduleId: paused.ScheduleId}))
	if err != nil {
		t.Fatal(err)
	}
	if next := resp.Msg.Schedule.NextFiringTime.AsTime(); !next.Equal(t0.Add(4 * time.Hour)) {
		t.Errorf("resumed, the next firing is %s after t0, not the first after the resumption", next.Sub(t0))
	}
	if s := c.get(deleted.ScheduleId); s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_DELETED {
		t.Errorf("the deleted schedule is %s", s.Status)
	}
}

// TestScheduleDaylightSavingAcrossAKill: schedules in America/New_York,
// each killed across a change of its clocks and started again after it:
// a daily 02:30 the spring forward skips fires once, at 03:30 EDT; a daily
// 01:30 the fall back repeats fires once, on the first; an hourly one fires
// every real hour, none at the 02:30 that does not exist and at both
// 01:30s. (2037, not 2027: every firing but the first of a test must be
// in the real future, where its timer does not fire during the test.)
func TestScheduleDaylightSavingAcrossAKill(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	at := func(day, hm string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", "2037-"+day+" "+hm, ny)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	// The repeated hour: the second 01:45, an hour after the first.
	secondOneFortyFive := at("11-01", "01:45").Add(time.Hour)
	type step struct {
		at   time.Time
		want string
	}
	for _, tc := range []struct {
		name, cron string
		created    time.Time
		steps      []step
	}{
		{"daily 02:30 over the spring forward", "30 2 * * *", at("03-07", "12:00"), []step{
			{at("03-08", "12:00"), "03-08 03:30 EDT started"},
			{at("03-09", "12:00"), "03-08 03:30 EDT started, 03-09 02:30 EDT cancelled_previous"},
		}},
		{"daily 01:30 over the fall back", "30 1 * * *", at("10-31", "12:00"), []step{
			{at("11-01", "12:00"), "11-01 01:30 EDT started"},
			{at("11-02", "12:00"), "11-01 01:30 EDT started, 11-02 01:30 EST cancelled_previous"},
		}},
		{"hourly over the spring forward", "30 * * * *", at("03-08", "00:00"), []step{
			{at("03-08", "01:00"), "03-08 00:30 EST started"},
			{at("03-08", "03:45"), "03-08 00:30 EST started, 03-08 01:30 EST skipped, 03-08 03:30 EDT cancelled_previous"},
		}},
		{"hourly over the fall back", "30 * * * *", at("11-01", "00:00"), []step{
			{at("11-01", "00:45"), "11-01 00:30 EDT started"},
			{secondOneFortyFive, "11-01 00:30 EDT started, 11-01 01:30 EDT skipped, 11-01 01:30 EST cancelled_previous"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startClocked(t, tc.created)
			s := c.create(&stewardv1.CreateScheduleRequest{
				Spec:    &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: tc.cron}, TimeZone: "America/New_York"},
				CatchUp: &stewardv1.CatchUp{Rule: stewardv1.CatchUpRule_CATCH_UP_RULE_ALL_WITHIN, Window: durationpb.New(24 * time.Hour)},
				Overlap: &stewardv1.Overlap{Policy: stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS},
			})
			for _, st := range tc.steps {
				c.killAt(st.at)
				s = c.waitFirings(s.ScheduleId, st.want, func(tm time.Time) string { return tm.In(ny).Format("01-02 15:04 MST") })
			}
			c.oneTaskPerRun(s)
		})
	}
}

// TestScheduleTwoControlPlanesAcrossAKill: `steward dev` and a second
// control plane (`steward serve --plane control` on its NATS) share the
// schedules' timers and log. Both are killed after the first firings;
// dev comes back before the clock moves (nothing due), then the clock
// moves three intervals and two control planes start at once, each
// ticking every schedule as it starts (and dev, were a timer whose ack
// went with the kill delivered again): yet each firing has one record and
// one run.
func TestScheduleTwoControlPlanesAcrossAKill(t *testing.T) {
	t0 := firstRunByTimer()
	listen := stewardtest.FreeAddr(t)
	dev := startClocked(t, t0, "--nats-listen", listen)
	args := []string{"serve", "--plane", "control", "--nats", "nats://" + listen, "--nats-nkey", filepath.Join(dev.data, "nats", "control.nk"),
		"--addr", "127.0.0.1:0", "--log-level", "warn", "--insecure"}
	second, third := dev.sibling(args...), dev.sibling(args...)
	second.start()
	var ss []*stewardv1.Schedule
	for i := range 4 {
		on := []*clocked{dev, second}[i%2] // created on either plane
		ss = append(ss, on.startFirstRun(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_LAST, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS, 0)))
	}
	second.p.kill()
	dev.killAt(t0)
	dev.set(t0.Add(3*time.Hour + 20*time.Minute))
	startTogether(second, third)
	for i, s := range ss {
		ss[i] = []*clocked{dev, second, third}[i%3].waitFirings(s.ScheduleId, "+1h started, 1 missed +2h..+2h, +3h cancelled_previous", stewardtest.HoursAfter(t0))
	}
	dev.oneTaskPerRun(ss...)
}
