package control_test

import (
	"context"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/eventlog"
)

func waitEvents(t *testing.T, log *eventlog.Log, taskID string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := log.Read(context.Background(), taskID)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s has %d events, want %d", taskID, len(recs), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
