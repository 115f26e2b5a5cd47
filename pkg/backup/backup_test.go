package backup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/backup"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// server starts an embedded JetStream server and connects to it.
func server(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	bus := stewardtest.StartBus(t)
	return bus.Conn, bus.JS
}

func TestOrderTakesDerivedThenTruthThenTheRest(t *testing.T) {
	got := backup.Order([]string{"EVENTS", "DEAD", "KV_REQ", "KV_VIEWS", "TIMERS"}, "EVENTS", "KV_VIEWS")
	want := []string{"KV_VIEWS", "EVENTS", "DEAD", "KV_REQ", "TIMERS"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// TestRestoreBringsBackMessagesBucketsAndConsumers backs up a stream with
// a durable consumer part way through it and a KV bucket, restores them
// into another server, and finds the same messages at the same sequences,
// the same keys, and the consumer where it was.
func TestRestoreBringsBackMessagesBucketsAndConsumers(t *testing.T) {
	ctx := context.Background()
	nc, js := server(t)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"ev.>"}, DenyDelete: true, DenyPurge: true})
	if err != nil {
		t.Fatal(err)
	}
	// Enough to need several chunks each way.
	body := []byte(strings.Repeat("x", 4000))
	for i := range 300 {
		if _, err := js.Publish(ctx, fmt.Sprintf("ev.%d", i%7), append(body, byte(i))); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "plane", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(120)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "REQ"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("stored request")); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "b")
	m, err := backup.Take(ctx, nc, []string{"EV", "KV_REQ"}, dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if m.Streams[0].Messages != 300 || m.Streams[0].LastSeq != 300 {
		t.Fatalf("manifest says %d messages up to %d, want 300 up to 300", m.Streams[0].Messages, m.Streams[0].LastSeq)
	}

	nc2, js2 := server(t)
	if cut, err := backup.ReadCut(ctx, js2); err != nil || cut != nil {
		t.Fatalf("a server never restored into has cut %v (%v), want none", cut, err)
	}
	if _, err := backup.Restore(ctx, nc2, dir, "EV"); err != nil {
		t.Fatal(err)
	}
	// The cut is the events' last message: what the execution plane
	// reads to tell an action proposed before it.
	if cut, err := backup.ReadCut(ctx, js2); err != nil || cut == nil || cut.Sequence != 300 || cut.Time.IsZero() {
		t.Fatalf("the restore recorded cut %+v (%v), want sequence 300 and its time", cut, err)
	}
	s2, err := js2.Stream(ctx, "EV")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s2.GetMsg(ctx, 300)
	if err != nil || string(msg.Data) != string(append(body, byte(299&0xff))) || msg.Subject != "ev.5" {
		t.Fatalf("message 300 after the restore: %v %q", err, msg.Subject)
	}
	if !s2.CachedInfo().Config.DenyDelete {
		t.Error("the restored stream lost its config: deletes allowed")
	}
	c2, err := s2.Consumer(ctx, "plane")
	if err != nil {
		t.Fatal(err)
	}
	if floor := c2.CachedInfo().AckFloor.Stream; floor != 120 {
		t.Fatalf("the restored consumer's ack floor is %d, want 120", floor)
	}
	kv2, err := js2.KeyValue(ctx, "REQ")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv2.Get(ctx, "k"); err != nil || string(e.Value()) != "stored request" {
		t.Fatalf("the bucket's key after the restore: %v", err)
	}
}

// TestRestoreRefusesWithoutTouchingTheServer: a damaged file, or a server
// that holds a stream of the backup already, is refused before any stream
// is restored.
func TestRestoreRefusesWithoutTouchingTheServer(t *testing.T) {
	ctx := context.Background()
	nc, dir, m := twoStreamBackup(t)
	if _, err := backup.Take(ctx, nc, []string{"A"}, dir, "test"); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("a second backup into the same directory: %v, want refused", err)
	}

	// B exists on the target: A must not be restored either.
	nc2, js2 := server(t)
	if _, err := js2.CreateStream(ctx, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(ctx, nc2, dir, ""); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("restore over an existing stream: %v, want refused", err)
	}
	if _, err := js2.Stream(ctx, "A"); err == nil {
		t.Fatal("a refused restore restored stream A")
	}

	// One byte changed in B's file: nothing is restored.
	nc3, js3 := server(t)
	path := filepath.Join(dir, m.Streams[1].File)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(ctx, nc3, dir, ""); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("restore of a damaged backup: %v, want refused", err)
	}
	if _, err := js3.Stream(ctx, "A"); err == nil {
		t.Fatal("a refused restore restored stream A")
	}
}

// TestTheCutHoldsWhatEventsName runs a writer that stores a value in a
// bucket and then publishes an event naming it, as the planes store a
// request before its proposal, while Take takes the events first and the
// bucket after (Order). Restored, every event's value is in the bucket;
// the bucket holds values no event names yet, which shows the writer moved
// between the two snapshots, where taking the bucket first would have left
// events naming values the backup lacks.
func TestTheCutHoldsWhatEventsName(t *testing.T) {
	ctx := context.Background()
	nc, js := server(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "REQ"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	written := make(chan error, 1)
	go func() {
		var err error
		for i := 0; wctx.Err() == nil && err == nil; i++ {
			key := fmt.Sprintf("r%d", i)
			if _, err = kv.Create(ctx, key, []byte(strings.Repeat("v", 2000))); err == nil {
				_, err = js.Publish(ctx, "ev.proposed", []byte(key))
			}
		}
		written <- err
	}()
	defer func() {
		stop()
		if err := <-written; err != nil {
			t.Error(err)
		}
	}()
	order := backup.Order([]string{"KV_REQ", "EV"}, "EV")
	for try := range 20 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(try))
		m, err := backup.Take(ctx, nc, order, dir, "test")
		if err != nil {
			t.Fatal(err)
		}
		events, keys := m.Streams[0].Messages, m.Streams[1].Messages
		if events == 0 || keys <= events {
			continue // the writer did not move between the snapshots
		}
		nc2, js2 := server(t)
		if _, err := backup.Restore(ctx, nc2, dir, ""); err != nil {
			t.Fatal(err)
		}
		ev, _ := js2.Stream(ctx, "EV")
		kv2, _ := js2.KeyValue(ctx, "REQ")
		for seq := uint64(1); seq <= events; seq++ {
			msg, err := ev.GetMsg(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kv2.Get(ctx, string(msg.Data)); err != nil {
				t.Fatalf("event %d names %s, which the restored bucket lacks: %v", seq, msg.Data, err)
			}
		}
		t.Logf("%d events, each naming a restored value; %d values in the bucket", events, keys)
		return
	}
	t.Fatal("the writer never moved between the snapshots of the events and the bucket")
}

// twoStreamBackup backs up streams A and B, one message each, into a new
// directory.
func twoStreamBackup(t *testing.T) (*nats.Conn, string, backup.Manifest) {
	t.Helper()
	ctx := context.Background()
	nc, js := server(t)
	for _, name := range []string{"A", "B"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, strings.ToLower(name)+".x", []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "b")
	m, err := backup.Take(ctx, nc, []string{"A", "B"}, dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	return nc, dir, m
}
