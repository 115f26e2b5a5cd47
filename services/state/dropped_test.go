package state_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// archiveAndPurge archives taskID's events as stored and purges them from
// the log, as steward archive run does.
func archiveAndPurge(t *testing.T, env *stewardtest.Env, arch *archive.Archive, taskID string) {
	t.Helper()
	ctx := context.Background()
	raws, err := env.Log.ReadRaw(ctx, taskID)
	if err != nil {
		t.Fatal(err)
	}
	bt := &stewardv1.BundleTask{TaskId: taskID}
	for _, r := range raws {
		bt.Events = append(bt.Events, &stewardv1.BundleEvent{Sequence: r.Sequence, Data: r.Data})
	}
	b := &stewardv1.AuditBundle{Tasks: []*stewardv1.BundleTask{bt}}
	if err := arch.Put(ctx, taskID, "", b); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.NewPurger(env.JS).PurgeTree(ctx, archive.HeldIn(b)); err != nil {
		t.Fatal(err)
	}
}

// listed is every task id ListTasks returns, read in pages of one.
func listed(t *testing.T, client stewardv1connect.QueryServiceClient) string {
	t.Helper()
	var ids []string
	for token := ""; ; {
		resp, err := client.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{PageSize: 1, PageToken: token}))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range resp.Msg.Tasks {
			ids = append(ids, s.Contract.TaskId)
		}
		if token = resp.Msg.NextPageToken; token == "" {
			return strings.Join(ids, " ")
		}
	}
}

// tasksOf is the steward_tasks gauge of status.
func tasksOf(t *testing.T, c prometheus.Collector, status string) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 256)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(m.Desc().String(), `"steward_tasks"`) && len(d.Label) == 1 && d.Label[0].GetValue() == status {
			return d.GetGauge().GetValue()
		}
	}
	t.Fatalf("no steward_tasks{status=%q}", status)
	return 0
}

// TestAnArchivedTaskLeavesTheViews: a task archived and purged from the
// log leaves the views of a running plane (ListTasks no longer lists it,
// steward_tasks no longer counts it) and GetTask and GetReceipt still
// answer for it, from the archive; a plane started from a snapshot taken
// while it was in the views neither refuses the snapshot nor keeps it.
// Without the archive, the plane keeps it and the snapshot is refused.
func TestAnArchivedTaskLeavesTheViews(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	ended := func(i int) []event.Payload {
		return []event.Payload{&stewardv1.TaskCreated{Contract: contract(i)}, &stewardv1.TaskStarted{}, &stewardv1.TaskCancelled{Reason: "done with it"}}
	}
	env.Append("old", ended(1)...)
	env.Append("live", &stewardv1.TaskCreated{Contract: contract(2)}, &stewardv1.TaskStarted{})
	env.Append("kept", ended(3)...)
	child := ended(4)
	child[0].(*stewardv1.TaskCreated).Contract.ParentTaskId = "live"
	env.Append("child", child...)
	store, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	arch := archive.New(store)
	views := openViews(t, env)
	p, client, _ := evictingPlane(t, env, state.Config{Views: views, Archive: arch})
	if _, err := p.SaveSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, client); got != "old live kept child" {
		t.Fatalf("listed %q before archiving", got)
	}

	// child's purge is one the archiver never does (its parent is
	// live): the views keep it for the parent's tree all the same.
	archiveAndPurge(t, env, arch, "child")
	archiveAndPurge(t, env, arch, "old")
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return !p.Views().Has("old"), "the archived task is still in the views"
	})
	looked := p.Evictions()
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) { return p.Evictions() > looked+1, "the evictor does not look" })
	if got := listed(t, client); got != "live kept child" {
		t.Errorf("listed %q after archiving, want live kept child", got)
	}
	if n := tasksOf(t, p.Collector(), "cancelled"); n != 2 {
		t.Errorf("steward_tasks{status=cancelled} %v after archiving, want 2 (kept, child)", n)
	}
	tree, err := client.GetTaskTree(ctx, connect.NewRequest(&stewardv1.GetTaskTreeRequest{TaskId: "live"}))
	if err != nil || len(tree.Msg.Root.GetChildren()) != 1 {
		t.Errorf("the live parent's tree after its sub-task's purge: %v, %v", tree, err)
	}
	if got, err := client.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "old"})); err != nil || got.Msg.Task.Status != stewardv1.TaskStatus_TASK_STATUS_CANCELLED {
		t.Errorf("GetTask of the archived task: %v, %v", got, err)
	}
	if r, err := client.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: "old"})); err != nil || r.Msg.Receipt.TaskId != "old" {
		t.Errorf("GetReceipt of the archived task: %v", err)
	}

	// The snapshot saved before still holds "old", whose head the log no
	// longer has: with the archive, it is a task to drop.
	second, client2 := serveQuery(t, env, state.Config{Views: views, Archive: arch})
	if n := testutil.ToFloat64(metricOf(t, second.Collector(), "steward_views_snapshot_load_seconds")); n <= 0 {
		t.Error("the snapshot holding an archived task was refused")
	}
	if got := listed(t, client2); got != "live kept child" {
		t.Errorf("a plane started from the snapshot lists %q, want live kept child", got)
	}
	// Without it, the plane cannot tell a purge from a damaged log.
	third := startPlane(t, env.Log, env.Logger, state.Config{Views: views})
	if testutil.CollectAndCount(third.Collector(), "steward_views_snapshot_load_seconds") != 0 {
		t.Error("a plane without the archive used a snapshot whose head the log lacks")
	}
}
