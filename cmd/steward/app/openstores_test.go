package app

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/stores"
)

// TestTheStartWaitsForJetStream: a plane started before JetStream can
// answer (here a server whose JetStream is enabled only later, as a
// cluster's meta leader is elected only after its nodes meet) asks again
// rather than exiting, and opens the stores once it answers.
func TestTheStartWaitsForJetStream(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not start")
	}
	t.Cleanup(s.Shutdown)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged bytes.Buffer
	m := &Server{logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logged}, nil))}
	opened := make(chan error, 1)
	go func() {
		st, err := m.openStores(context.Background(), js, stores.Config{})
		if err == nil {
			st.Close()
		}
		opened <- err
	}()
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(logged.String(), "JetStream has not answered yet"), logged.String()
	})
	if err := s.EnableJetStream(&server.JetStreamConfig{StoreDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("the stores did not open once JetStream answered: %v", err)
		}
	case <-time.After(storesWait):
		t.Fatal("the stores did not open once JetStream answered")
	}
}

// TestTheStartEndsAtARefusal: what JetStream answers with a refusal ends
// the start at once, without asking again.
func TestTheStartEndsAtARefusal(t *testing.T) {
	if unanswered(jetstream.ErrStreamNameAlreadyInUse) || !unanswered(context.DeadlineExceeded) || !unanswered(jetstream.ErrJetStreamNotEnabled) {
		t.Fatal("a refusal is taken for silence, or silence for a refusal")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
