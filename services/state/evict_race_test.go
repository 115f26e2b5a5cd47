package state_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestEvictionUnderConcurrentReads: while readers read every ended task,
// list and count the tasks without pause, the plane evicts the ended
// tasks, revives one that an auditor's finding moves (its stub cannot
// fold it), and evicts it again. Every read succeeds and every task no
// event moved reads as it did before; the revived task shows its new
// finding, and its metrics are a fold of the whole log's. Run it with
// -race.
func TestEvictionUnderConcurrentReads(t *testing.T) {
	env := stewardtest.NewEnv(t)
	writeMetricsHistories(t, env)
	p, client, c := evictingPlane(t, env, state.Config{})
	ctx := context.Background()
	gone := ended(t, client)
	before := map[string]string{}
	for _, id := range gone {
		got, err := client.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: id}))
		if err != nil {
			t.Fatal(err)
		}
		before[id] = protojson.Format(got.Msg)
	}
	readCtx, stop := context.WithCancel(ctx)
	var g errgroup.Group
	for range 3 {
		g.Go(func() error {
			for n := 0; readCtx.Err() == nil || n == 0; n++ {
				for id, want := range before {
					got, err := client.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: id}))
					switch {
					case err != nil:
						return fmt.Errorf("GetTask %s: %w", id, err)
					case id != "denied" && protojson.Format(got.Msg) != want:
						return fmt.Errorf("GetTask %s changed:\n want %s\n got  %s", id, want, protojson.Format(got.Msg))
					}
				}
				if _, err := client.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{PageSize: 3})); err != nil {
					return fmt.Errorf("ListTasks: %w", err)
				}
				if n := testutil.CollectAndCount(state.NewTaskCollector(p.Views())); n == 0 {
					return fmt.Errorf("no task metrics")
				}
			}
			return nil
		})
	}
	evictAll(t, p, c, gone)
	env.Append("denied", &stewardv1.FindingRecorded{Finding: &stewardv1.Finding{
		FindingId: "f-later", Kind: stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION, Description: "found after the eviction",
	}})
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return !p.Views().Evicted("denied"), "the task a finding moved is not revived"
	})
	got, err := client.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "denied"}))
	if err != nil || len(got.Msg.Task.Findings) != 2 {
		t.Fatalf("GetTask of the revived task: %v, %v", got, err)
	}
	whole := follow(t, env.Log)
	caughtUp(t, env, whole)
	caughtUp(t, env, p.Views())
	if w, g := metricsText(t, state.NewTaskCollector(whole)), metricsText(t, state.NewTaskCollector(p.Views())); w != g {
		t.Errorf("after the revival, the metrics are not the whole log's:\n want %s\n got  %s", w, g)
	}
	evictAll(t, p, c, []string{"denied"})
	stop()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestAFormatOneSnapshotStillLoads: a snapshot of the format before
// evictions (1, no stubs) is loaded, not refused, and the plane serves
// what a fold of the whole log serves.
func TestAFormatOneSnapshotStillLoads(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ctx := context.Background()
	views := openViews(t, env)
	writeMetricsHistories(t, env)
	first := startPlane(t, env.Log, env.Logger, state.Config{Views: views, EvictAfter: -1})
	covered, err := first.SaveSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, entries := readNewest(t, views)
	h.FormatVersion = 1
	data := encode(t, h, entries)
	if _, err := views.Put(ctx, covered, time.Now(), func(w, _ io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		t.Fatal(err)
	}
	second := startPlane(t, env.Log, env.Logger, state.Config{Views: views, EvictAfter: -1})
	if got := second.SnapshotCovered(); got != covered {
		t.Fatalf("the plane started from %d, want the format 1 snapshot covering %d", got, covered)
	}
	whole := follow(t, env.Log)
	caughtUp(t, env, whole)
	sameViews(t, whole, second.Views())
}
