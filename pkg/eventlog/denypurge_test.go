package eventlog_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/eventlog"
)

// TestOpensALogMadeRefusingPurges: a log created before archiving
// existed refuses purges (DenyPurge), which JetStream cannot lift. Open
// must use it as it is — also when it adds a subject a newer version
// needs — never fail trying to change it: every existing deployment
// starts on such a log.
func TestOpensALogMadeRefusingPurges(t *testing.T) {
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
	// The old way: DenyPurge, and one subject fewer than today's, so
	// that Open updates the stream.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       eventlog.DefaultStream,
		Subjects:   []string{eventlog.DefaultSubjectPrefix + ".>"},
		Discard:    jetstream.DiscardNew,
		DenyDelete: true,
		DenyPurge:  true,
	}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the first start adds subjects, the second finds them
		if _, err := eventlog.Open(ctx, js, eventlog.Config{}); err != nil {
			t.Fatalf("start %d on a log made refusing purges: %v", i+1, err)
		}
	}
	s, err := js.Stream(ctx, eventlog.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := s.CachedInfo().Config; !cfg.DenyPurge || len(cfg.Subjects) < 2 {
		t.Errorf("the log after Open: DenyPurge %v, subjects %v", cfg.DenyPurge, cfg.Subjects)
	}
}
