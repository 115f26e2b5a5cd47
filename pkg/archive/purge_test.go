package archive_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestPurgeTreeTakesOnlyWhatTheArchiveHolds: a task that got an event
// after its bundle was read keeps every event on the log (its bundle is
// stale), and a tree whose log matches its bundle is purged.
func TestPurgeTreeTakesOnlyWhatTheArchiveHolds(t *testing.T) {
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := eventlog.Open(ctx, js, eventlog.Config{}); err != nil {
		t.Fatal(err)
	}
	publish := func(task string) uint64 {
		ack, err := js.Publish(ctx, eventlog.DefaultSubjectPrefix+"."+task+".TaskCreated", []byte(task))
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	held := func(task string) uint64 {
		s, _ := js.Stream(ctx, eventlog.DefaultStream)
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(eventlog.DefaultSubjectPrefix+"."+task+".>"))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, c := range info.State.Subjects {
			n += c
		}
		return n
	}
	bundle := &stewardv1.AuditBundle{Tasks: []*stewardv1.BundleTask{
		{TaskId: "late", Events: []*stewardv1.BundleEvent{{Sequence: publish("late")}}},
		{TaskId: "done", Events: []*stewardv1.BundleEvent{{Sequence: publish("done")}}},
	}}
	publish("late") // after the bundle was read
	p := archive.NewPurger(js)
	if _, err := p.PurgeTree(ctx, archive.HeldIn(bundle)); !errors.Is(err, archive.ErrChanged) {
		t.Errorf("purging a tree with an event the bundle lacks: %v, want ErrChanged", err)
	}
	if held("late") != 2 || held("done") != 1 {
		t.Fatalf("after a refused purge the log holds late %d, done %d; want 2, 1", held("late"), held("done"))
	}
	bundle.Tasks = bundle.Tasks[1:]
	if n, err := p.PurgeTree(ctx, archive.HeldIn(bundle)); err != nil || n != 1 || held("done") != 0 {
		t.Errorf("purging a tree the log matches: %d, %v; done holds %d", n, err, held("done"))
	}
}
