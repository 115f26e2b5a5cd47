package e2e_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// overwriteBlob replaces the bytes stored under key in a content-addressed
// bucket, as a disk fault or a careless restore would. The buckets are
// write-once (pkg/bucket), so no plane can do this through JetStream's
// API: the admin user lifts the protection first, which is the only way
// left to make the bytes a test needs the planes to refuse.
func overwriteBlob(t *testing.T, js jetstream.JetStream, bucket, key string, data []byte) {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.DiscardNewPerSubject = false
	cfg.Discard = jetstream.DiscardOld
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("lift write-once on %s: %v", bucket, err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, key, data); err != nil {
		t.Fatalf("overwrite %s/%s: %v", bucket, key, err)
	}
}
