package embedded_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
)

// TestSyncAlways: a server started with SyncAlways has JetStream sync
// every write (and still takes appends); one started without keeps
// JetStream's interval.
func TestSyncAlways(t *testing.T) {
	for _, always := range []bool{false, true} {
		s, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), SyncAlways: always})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.SyncsAlways(); got != always {
			t.Errorf("SyncAlways %v: the server syncs always = %v", always, got)
		}
		nc, err := s.Connect()
		if err != nil {
			t.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		ctx := context.Background()
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, "s", []byte("x")); err != nil {
			t.Errorf("SyncAlways %v: append: %v", always, err)
		}
		nc.Close()
		s.Shutdown()
	}
}

// BenchmarkAppend appends one message at a time, acknowledged, with
// JetStream's default sync interval and with every write synced: the
// cost --sync always adds to each append, on this machine's disk.
//
//	go test -run '^$' -bench Append -count 5 ./pkg/embedded/
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name   string
		always bool
	}{{"interval", false}, {"always", true}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := embedded.Start(embedded.Config{StoreDir: b.TempDir(), SyncAlways: c.always})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown()
			nc, err := s.Connect()
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			ctx := context.Background()
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
				b.Fatal(err)
			}
			msg := make([]byte, 512)
			b.ResetTimer()
			for b.Loop() {
				if _, err := js.Publish(ctx, "s", msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
