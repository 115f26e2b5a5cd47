package natsperm_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/natsperm"
)

// TestOnlyTheArchiverPurges: no plane may purge a task's events; the
// archiver purges one task's and leaves the other's, and may
// neither append an event nor delete the stream.
func TestOnlyTheArchiverPurges(t *testing.T) {
	s := startServer(t)
	_, admin := openStores(t, s)
	ctx := context.Background()
	subject := func(task string) string {
		return eventlog.DefaultSubjectPrefix + "." + task + "." + event.TypeTaskCreated
	}
	for _, task := range []string{"gone", "kept"} {
		if _, err := admin.js.Publish(ctx, subject(task), []byte(task)); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := admin.js.Stream(ctx, eventlog.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	held := func(task string) uint64 {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject(task)))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subject(task)]
	}
	arch := s.connect(t, natsperm.Archiver)
	p := archive.NewPurger(arch.js)
	for _, plane := range natsperm.Planes() {
		// Refused by permissions: the server answers nothing, and the
		// request waits out its context.
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		if _, err := archive.NewPurger(s.connect(t, plane).js).PurgeTree(pctx, []archive.Held{{TaskID: "gone", Events: 1, Last: 1 << 62}}); err == nil {
			t.Errorf("the %s plane purged a task", plane)
		}
		cancel()
	}
	if held("gone") != 1 {
		t.Fatal("a plane's purge took the task's events")
	}
	if n, err := p.PurgeTree(ctx, []archive.Held{{TaskID: "gone", Events: 1, Last: 1 << 62}}); err != nil || n != 1 {
		t.Fatalf("the archiver's purge: %d, %v", n, err)
	}
	if held("gone") != 0 || held("kept") != 1 {
		t.Errorf("after the purge the log holds gone %d, kept %d; want 0, 1", held("gone"), held("kept"))
	}
	if _, err := arch.js.Publish(ctx, subject("forged"), []byte("x")); err == nil {
		t.Error("the archiver appended an event")
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := arch.js.DeleteStream(dctx, eventlog.DefaultStream); err == nil {
		t.Error("the archiver deleted the log")
	}
	if _, err := s.connect(t, embedded.AdminUser).js.Stream(ctx, eventlog.DefaultStream); err != nil {
		t.Errorf("the log after the archiver's attempts: %v", err)
	}
}
