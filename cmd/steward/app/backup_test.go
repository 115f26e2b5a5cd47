package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/backup"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestBackupOrderTakesTheEventsBeforeWhatTheyName pins the order of
// docs/backup.md: views first, events second, and every other stream
// Steward keeps after them, none left out.
func TestBackupOrderTakesTheEventsBeforeWhatTheyName(t *testing.T) {
	got := backupOrder()
	if len(got) < 3 || got[0] != "KV_STEWARD_STATE_VIEWS" || got[1] != "STEWARD_EVENTS" {
		t.Fatalf("backup order %v: want the view snapshots, then the events, then the rest", got)
	}
	for _, want := range []string{"KV_STEWARD_REQUESTS", "KV_STEWARD_RESULTS", "KV_STEWARD_POLICY", "KV_STEWARD_REQUEST_IDS", "STEWARD_DEADLETTER", "STEWARD_TIMERS_EXECUTION"} {
		if i := slices.Index(got, want); i < 2 {
			t.Errorf("%s is taken at %d of %v: want after the events", want, i, got)
		}
	}
	all := natsperm.Streams()
	if slices.Sort(all); !slices.Equal(all, slices.Sorted(slices.Values(got))) {
		t.Errorf("backup order %v is not every stream Steward keeps, %v", got, all)
	}
}

// TestBackupAndRestoreOverNATS runs both commands against NATS servers by
// URL, as for a services deployment: what the events stream and a bucket
// held comes back in a fresh server; a backup of a server without
// Steward's events stream, and missing flags, are refused.
func TestBackupAndRestoreOverNATS(t *testing.T) {
	ctx := context.Background()
	bus := stewardtest.StartBus(t)
	from, js := bus.Server.ClientURL(), bus.JS
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: eventlog.DefaultStream, Subjects: []string{"steward.task.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := js.Publish(ctx, fmt.Sprintf("steward.task.t%d.task.created", i), []byte("e")); err != nil {
			t.Fatal(err)
		}
	}
	// A plane's consumer on the events and on its timers: the first goes
	// with the backup, the second not (the timers start afresh).
	timers := natsperm.TimerStreams()[0]
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: timers, Subjects: []string{"steward.timer.x.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{eventlog.DefaultStream, timers} {
		if _, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "plane", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "STEWARD_REQUESTS"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "h", []byte("request")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "b")
	var out, errOut bytes.Buffer
	if code := Main([]string{"backup", "--nats", from, "--out", dir}, &out, &errOut); code != 0 {
		t.Fatalf("backup exited %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "STEWARD_EVENTS") || strings.Contains(out.String(), "STEWARD_RESULTS") {
		t.Errorf("backup names what it took, and only what the server holds:\n%s", out.String())
	}

	bus2 := stewardtest.StartBus(t)
	to, js2 := bus2.Server.ClientURL(), bus2.JS
	if code := Main([]string{"restore", "--from", dir, "--nats", to}, &out, &errOut); code != 0 {
		t.Fatalf("restore exited %d: %s", code, errOut.String())
	}
	s, err := js2.Stream(ctx, eventlog.DefaultStream)
	if err != nil || s.CachedInfo().State.Msgs != 10 {
		t.Fatalf("the restored events stream: %v", err)
	}
	if cut, err := backup.ReadCut(ctx, js2); err != nil || cut == nil || cut.Sequence != 10 || !strings.Contains(out.String(), "the cut is event 10") {
		t.Errorf("the restore's cut: %+v %v, want event 10, said:\n%s", cut, err, out.String())
	}
	if _, err := js2.Consumer(ctx, eventlog.DefaultStream, "plane"); err != nil {
		t.Errorf("the events' consumer after the restore: %v", err)
	}
	if _, err := js2.Consumer(ctx, timers, "plane"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the timers' consumer after the restore: %v, want none (the timers start afresh)", err)
	}
	kv2, err := js2.KeyValue(ctx, "STEWARD_REQUESTS")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv2.Get(ctx, "h"); err != nil || string(e.Value()) != "request" {
		t.Fatalf("the restored bucket: %v", err)
	}

	empty := stewardtest.StartBus(t).Server.ClientURL()
	errOut.Reset()
	if code := Main([]string{"backup", "--nats", empty, "--out", filepath.Join(t.TempDir(), "c")}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "no STEWARD_EVENTS") {
		t.Errorf("backup of a server without Steward's events: exit %d, %s", code, errOut.String())
	}
	for _, args := range [][]string{{"backup", "--nats", from}, {"restore", "--from", dir}, {"restore", "--from", dir, "--nats", to, "--data", dir}} {
		if code := Main(args, &out, &errOut); code != 2 {
			t.Errorf("steward %v exited %d, want 2", args, code)
		}
	}
}
