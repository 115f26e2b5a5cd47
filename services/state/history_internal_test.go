package state

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/archive"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAnEvictedTaskReadsFromTheArchiveOnceTheLogLosesIt: between the
// archiver's purge and the evictor's next look (dropArchived), the views
// still hold the task's stub, and a read of its whole view (GetTask,
// GetAction, GetResult, ListDecisions) goes cold: the one path to its
// history finds it in the archive, as GetReceipt and a task no longer in
// the views do, rather than answering that a listed task is not found.
func TestAnEvictedTaskReadsFromTheArchiveOnceTheLogLosesIt(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	c := &stewardv1.TaskContract{Intent: "old", DesiredOutcome: "done", RequesterRef: "user:a", AccountableOwnerRef: "user:a"}
	env.Append("t", &stewardv1.TaskCreated{Contract: c}, &stewardv1.TaskStarted{}, &stewardv1.TaskCancelled{Reason: "r"})
	recs, err := env.Log.Read(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	raws, err := env.Log.ReadRaw(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	bt := &stewardv1.BundleTask{TaskId: "t"}
	for _, r := range raws {
		bt.Events = append(bt.Events, &stewardv1.BundleEvent{Sequence: r.Sequence, Data: r.Data})
	}
	store, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	arch := archive.New(store)
	if err := arch.Put(ctx, "t", "", &stewardv1.AuditBundle{Tasks: []*stewardv1.BundleTask{bt}}); err != nil {
		t.Fatal(err)
	}
	views := NewProjection(slog.New(slog.DiscardHandler))
	for _, r := range recs {
		_ = views.Apply(r)
	}
	if n := views.Evict(time.Now().Add(24 * time.Hour)); n != 1 {
		t.Fatalf("%d evicted, want 1", n)
	}
	// The log no longer holds it: its cold read finds nothing there.
	p := &Plane{views: views, cold: coldRecords(nil), cfg: Config{Archive: arch}, coldReads: make(chan struct{}, maxColdReads), logger: slog.New(slog.DiscardHandler)}
	var got *stewardv1.Task
	err = p.read(ctx, "t", func(v *Projection) error {
		got, err = v.Get("t")
		return err
	})
	if err != nil || got.Status != stewardv1.TaskStatus_TASK_STATUS_CANCELLED || got.LastSequence != recs[2].Sequence {
		t.Fatalf("the evicted task read once the log lost it: %v, %v", got, err)
	}
}
