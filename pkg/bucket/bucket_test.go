package bucket_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// rollUp publishes a roll-up of the whole bucket, as anyone who may put
// one key of it could.
func rollUp(ctx context.Context, js jetstream.JetStream, name string) error {
	_, err := js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + name + ".any", Header: nats.Header{"Nats-Rollup": {"all"}}})
	return err
}

// TestABucketThatIsNotWriteOnce: keys may be deleted and written again,
// as the first-use records are, but the bucket cannot be purged.
func TestABucketThatIsNotWriteOnce(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	kv, err := bucket.Open(ctx, bus.JS, bucket.Config{Name: "B"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := rollUp(ctx, bus.JS, "B"); err == nil {
		t.Error("a roll-up of the whole bucket was taken")
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "1" {
		t.Fatalf("k after the roll-up: %v", err)
	}
	if err := kv.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "k", []byte("2")); err != nil {
		t.Fatalf("k again after its delete: %v", err)
	}
}

// TestABucketOfAnEarlierVersion: a bucket jetstream.CreateKeyValue made
// allows roll-ups, and this one keeps a history of five values per key.
// Open uses it as it is and says how to fix it; with Harden it fixes it.
func TestABucketOfAnEarlierVersion(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	if _, err := bus.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "OLD", History: 5}); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	cfg := bucket.Config{Name: "OLD", WriteOnce: true, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	if _, err := bucket.Open(ctx, bus.JS, cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "nats stream edit KV_OLD -f --no-allow-rollup --deny-purge --discard new --discard-per-subject --max-msgs-per-subject 1") {
		t.Errorf("no warning naming the fix: %q", logged.String())
	}
	cfg.Harden = true
	kv, err := bucket.Open(ctx, bus.JS, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := rollUp(ctx, bus.JS, "OLD"); err == nil {
		t.Error("a roll-up was taken after Harden")
	}
	if _, err := kv.Put(ctx, "k", []byte("2")); err == nil {
		t.Error("a put over a key was taken after Harden")
	}
	logged.Reset()
	if _, err := bucket.Open(ctx, bus.JS, bucket.Config{Name: "OLD", WriteOnce: true, Logger: cfg.Logger}); err != nil || logged.Len() > 0 {
		t.Errorf("Open of the fixed bucket: %v, logged %q", err, logged.String())
	}
}

// TestAPurgeableBucket: a content bucket is made taking the purge API (the
// archiver's, docs/archives.md) but still refusing roll-ups and second
// writes; one made refusing purges before is opened as it is, with no
// warning, since JetStream cannot lift DenyPurge and nothing is unsafe.
func TestAPurgeableBucket(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	kv, err := bucket.Open(ctx, bus.JS, bucket.Config{Name: "P", WriteOnce: true, Purgeable: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "t1.k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := rollUp(ctx, bus.JS, "P"); err == nil {
		t.Error("a roll-up was taken")
	}
	if _, err := kv.Put(ctx, "t1.k", []byte("2")); err == nil {
		t.Error("a put over a key was taken")
	}
	s, err := bus.JS.Stream(ctx, bucket.StreamName("P"))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.CachedInfo().Config; c.DenyPurge || !c.DenyDelete {
		t.Fatalf("the stream has DenyPurge %v, DenyDelete %v; want false, true", c.DenyPurge, c.DenyDelete)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject("$KV.P.t1.>")); err != nil {
		t.Fatalf("purge of a task's keys: %v", err)
	}
	if _, err := kv.Get(ctx, "t1.k"); err == nil {
		t.Error("the purged key is still there")
	}
	if _, err := bucket.Open(ctx, bus.JS, bucket.Config{Name: "OLDP", WriteOnce: true}); err != nil {
		t.Fatal(err)
	}
	for _, harden := range []bool{false, true} {
		if _, err := bucket.Open(ctx, bus.JS, bucket.Config{Name: "OLDP", WriteOnce: true, Purgeable: true, Harden: harden, Logger: logger}); err != nil {
			t.Fatal(err)
		}
	}
	if logged.Len() > 0 {
		t.Errorf("logged %q for a bucket made refusing purges", logged.String())
	}
}
