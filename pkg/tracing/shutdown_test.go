package tracing_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/tracing"
)

// TestADeadCollectorDoesNotHoldTheProcess: with a collector that takes
// connections and never answers, ending spans does not block and
// Shutdown — what a stopping process waits on — gives up within
// tracing.ShutdownTimeout instead of DefaultExportTimeout for each batch
// still queued.
func TestADeadCollectorDoesNotHoldTheProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accept and hold: a collector that hangs
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tp, err := tracing.NewProvider(context.Background(), tracing.Config{Endpoint: "http://" + ln.Addr().String(), Service: "t"})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for range 10000 { // more than the queue holds: the rest are dropped, not waited for
		_, span := tp.Tracer("t").Start(context.Background(), "x")
		span.End()
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("ending 10000 spans took %v with the collector down", d)
	}
	began = time.Now()
	_ = tp.Shutdown(context.Background())
	if d := time.Since(began); d > tracing.ShutdownTimeout+5*time.Second {
		t.Errorf("Shutdown took %v with the collector down; want at most about %v", d, tracing.ShutdownTimeout)
	}
}
