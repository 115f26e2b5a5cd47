// Package stewardtest has helpers for tests that run against real
// components: an embedded JetStream server per test, and the event log on
// top of it.
package stewardtest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/eventlog"
)

// Bus is an embedded JetStream server for one test, with a connection.
type Bus struct {
	Server *embedded.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
}

// StartBus runs an embedded JetStream server with a random port and file
// storage in a temporary directory; it is stopped when the test ends.
func StartBus(tb testing.TB) *Bus {
	tb.Helper()
	s, err := embedded.Start(embedded.Config{StoreDir: tb.TempDir(), Port: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Shutdown)
	bus := connectBus(tb, s.Connect)
	bus.Server = s
	return bus
}

// connectBus opens a connection with connect, closed when the test ends,
// and returns it as a Bus without a Server.
func connectBus(tb testing.TB, connect func(...nats.Option) (*nats.Conn, error)) *Bus {
	tb.Helper()
	nc, err := connect()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return &Bus{Conn: nc, JS: js}
}

// OpenLog opens the event log on a fresh bus.
func OpenLog(tb testing.TB) (*eventlog.Log, *Bus) {
	tb.Helper()
	bus := StartBus(tb)
	log, err := eventlog.Open(context.Background(), bus.JS, eventlog.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	return log, bus
}
