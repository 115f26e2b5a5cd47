package e2e_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
)

// overwriteBlob replaces the bytes stored under ref in a content-addressed
// bucket, as a disk fault or a careless restore would. The buckets are
// write-once (pkg/bucket), so no plane can do this through JetStream's
// API: the admin user lifts the protection first, which is the only way
// left to make the bytes a test needs the planes to refuse. It fails the
// test unless ref names bytes that are there: a test that changed some
// other key would prove nothing.
func overwriteBlob(t *testing.T, js jetstream.JetStream, ref string, data []byte) {
	t.Helper()
	ctx := context.Background()
	r, err := action.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "KV_"+r.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.DiscardNewPerSubject = false
	cfg.Discard = jetstream.DiscardOld
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("lift write-once on %s: %v", r.Bucket, err)
	}
	kv, err := js.KeyValue(ctx, r.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, r.Key()); err != nil {
		t.Fatalf("%s is not stored: %v", ref, err)
	}
	if _, err := kv.Put(ctx, r.Key(), data); err != nil {
		t.Fatalf("overwrite %s: %v", ref, err)
	}
}
