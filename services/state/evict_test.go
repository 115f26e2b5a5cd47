package state_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// clock is a plane's clock a test moves.
type clock struct{ at atomic.Int64 }

func newClock(at time.Time) *clock { c := &clock{}; c.set(at); return c }
func (c *clock) set(at time.Time)  { c.at.Store(at.UnixNano()) }
func (c *clock) now() time.Time    { return time.Unix(0, c.at.Load()) }

// evictingPlane serves env from a plane that evicts a task a minute after
// its end, whose clock starts before every task (so none is evicted)
// and whose watchdog marks nothing stalled for 15 minutes
// (task.DefaultStallAfter).
func evictingPlane(t *testing.T, env *stewardtest.Env, cfg state.Config) (*state.Plane, stewardv1connect.QueryServiceClient, *clock) {
	t.Helper()
	cfg, c := evicting(cfg)
	p, client := serveQuery(t, env, cfg)
	return p, client, c
}

// evicting is cfg with evictingPlane's clock and times.
func evicting(cfg state.Config) (state.Config, *clock) {
	c := newClock(proposalTime.Add(-24 * time.Hour))
	cfg.Now, cfg.StallCheckEvery, cfg.RedriveAfter, cfg.EvictAfter = c.now, 20*time.Millisecond, 1000*time.Hour, time.Minute
	return cfg, c
}

// readings is everything a client reads of the tasks, as text, keyed by
// what was read: each task, its actions, decisions and receipt, the list
// in pages of two with and without a filter, and the task metrics.
func readings(t *testing.T, client stewardv1connect.QueryServiceClient, views *state.Projection) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	text := func(m proto.Message) string { return protojson.Format(m) }
	for _, f := range []*stewardv1.ListTasksRequest{{}, {Statuses: []stewardv1.TaskStatus{stewardv1.TaskStatus_TASK_STATUS_FAILED, stewardv1.TaskStatus_TASK_STATUS_RUNNING}}, {Text: "task"}} {
		for page, token := 0, ""; ; page++ {
			req := proto.CloneOf(f)
			req.PageSize, req.PageToken = 2, token
			resp, err := client.ListTasks(ctx, connect.NewRequest(req))
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("list %v page %d", f, page)] = text(resp.Msg)
			if token = resp.Msg.NextPageToken; token == "" {
				break
			}
		}
	}
	all, err := client.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	// An answer or its error: a broken task's are errors, the same ones.
	record := func(key string, m proto.Message, err error) {
		out[key] = fmt.Sprint(err)
		if err == nil {
			out[key] = text(m)
		}
	}
	for _, s := range all.Msg.Tasks {
		id := s.Contract.TaskId
		got, err := client.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: id}))
		if err != nil {
			record("task "+id, nil, err)
		} else {
			record("task "+id, got.Msg, nil)
			for _, a := range got.Msg.Task.Actions {
				ga, err := client.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: id, ActionId: a.ActionId}))
				record("action "+id+" "+a.ActionId, msgOf(ga), err)
			}
		}
		r, err := client.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: id}))
		record("receipt "+id, msgOf(r), err)
		d, err := client.ListDecisions(ctx, connect.NewRequest(&stewardv1.ListDecisionsRequest{TaskId: id}))
		record("decisions "+id, msgOf(d), err)
	}
	out["metrics"] = metricsText(t, state.NewTaskCollector(views))
	return out
}

// metricsText is what c collects, as the exposition format has it.
func metricsText(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	var b strings.Builder
	for _, f := range gather(t, c) {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(b.String(), "steward_decisions_flagged") {
		t.Fatalf("the task metrics miss steward_decisions_flagged:\n%s", b.String())
	}
	return b.String()
}

// msgOf is r's message, nil for no answer.
func msgOf[T any](r *connect.Response[T]) proto.Message {
	if r == nil {
		return nil
	}
	return any(r.Msg).(proto.Message)
}

// sameReadings fails t where got differs from want.
func sameReadings(t *testing.T, want, got map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d readings, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n want %s\n got  %s", k, w, got[k])
		}
	}
}

// ended returns the ids of the tasks that have ended, but the broken one.
func ended(t *testing.T, client stewardv1connect.QueryServiceClient) (out []string) {
	t.Helper()
	all, err := client.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all.Msg.Tasks {
		switch s.Status {
		case stewardv1.TaskStatus_TASK_STATUS_ACCEPTED, stewardv1.TaskStatus_TASK_STATUS_FAILED, stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
			if s.Contract.TaskId != "broken" { // its view stopped at a refused event: never evicted
				out = append(out, s.Contract.TaskId)
			}
		}
	}
	return out
}

// evictAll moves c past every task's end by two minutes, waits
// until p has evicted every task of ids, and moves c back.
func evictAll(t *testing.T, p *state.Plane, c *clock, ids []string) {
	t.Helper()
	c.set(time.Now().Add(2 * time.Minute))
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		for _, id := range ids {
			if !p.Views().Evicted(id) {
				return false, id + " is not evicted"
			}
		}
		return true, ""
	})
	// Back, so that the watchdog marks no later task stalled; evicted
	// tasks stay so.
	c.set(proposalTime.Add(-24 * time.Hour))
}

// TestAnEvictedTaskReadsAsBefore: ended tasks (accepted, failed,
// compensated, cancelled; with approvals, findings, spend and unknown
// outcomes) are evicted once the plane's clock passes an hour after their
// end, and running ones are not; then every task, action, decision list
// and receipt, the list in pages of two across hot and evicted tasks
// (filtered and not), and the task metrics read exactly as before. A
// snapshot then holds the stubs alone, is smaller, and a plane started
// from it reads the same again.
func TestAnEvictedTaskReadsAsBefore(t *testing.T) {
	env := stewardtest.NewEnv(t)
	writeMetricsHistories(t, env)
	env.Append("decided", decidedHistory(t)...)
	views := openViews(t, env)
	p, client, c := evictingPlane(t, env, state.Config{Views: views})
	before := readings(t, client, p.Views())
	full, err := p.SaveSnapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fullBytes := p.SnapshotBytes()
	gone := ended(t, client)
	if len(gone) < 4 {
		t.Fatalf("only %v ended: the test evicts too little", gone)
	}
	if looked := p.Evictions(); looked == 0 || p.Views().Evicted(gone[0]) {
		stewardtest.Eventually(t, 10*time.Second, func() (bool, string) { return p.Evictions() > looked, "the evictor does not look" })
	}
	for _, id := range gone {
		if p.Views().Evicted(id) {
			t.Fatalf("%s was evicted before the clock passed its end", id)
		}
	}
	evictAll(t, p, c, gone)
	for _, id := range []string{"allowed", "settled", "checksfailed", "broken"} {
		if p.Views().Evicted(id) {
			t.Errorf("%s, not ended, was evicted", id)
		}
	}
	sameReadings(t, before, readings(t, client, p.Views()))

	env.Append("later", running()...) // so that the snapshot covers more
	caughtUp(t, env, p.Views())
	now := readings(t, client, p.Views())
	if covered, err := p.SaveSnapshot(context.Background()); err != nil || covered <= full {
		t.Fatalf("SaveSnapshot: %d, %v", covered, err)
	}
	if p.SnapshotBytes() >= fullBytes {
		t.Errorf("the snapshot with %d tasks evicted is %d bytes, not smaller than the %d bytes before", len(gone), p.SnapshotBytes(), fullBytes)
	}
	second, client2, _ := evictingPlane(t, env, state.Config{Views: views})
	for _, id := range gone {
		if !second.Views().Evicted(id) {
			t.Errorf("%s is whole in the plane started from the snapshot", id)
		}
	}
	sameReadings(t, now, readings(t, client2, second.Views()))
}

// decidedHistory is a task that recorded decisions, one of them flagged
// (its context had expired), and was then cancelled.
func decidedHistory(t *testing.T) []event.Payload {
	t.Helper()
	payloads := decisionPayloads(proposalTime)
	return append(payloads, &stewardv1.TaskCancelled{Reason: "decided enough"})
}
