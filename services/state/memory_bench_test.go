package state_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// heapAfterGC is the live heap once a collection has run.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// runningHistory is a task running with one succeeded action (as
// bench -memory's), endedHistory the same task then cancelled.
func runningHistory(i int) []event.Payload {
	return append([]event.Payload{&stewardv1.TaskCreated{Contract: contract(i)}, &stewardv1.TaskStarted{}},
		append(act("a1", "lookup", "crm", "r1"), succeededOutcome("a1", 1))...)
}

func endedHistory(i int) []event.Payload {
	return append(runningHistory(i), &stewardv1.TaskCancelled{Reason: "done with it"})
}

// resultHistory is endedHistory with a 4 KiB result inline, as a
// tool's small answer travels (docs/results.md).
func resultHistory(i int) []event.Payload {
	h := endedHistory(i)
	o := succeededOutcome("a1", 1)
	result := []byte(`"` + strings.Repeat("x", 4094) + `"`)
	sum := sha256.Sum256(result)
	o.Outcome.ResultRef, o.Outcome.Result, o.Outcome.ResultHash = "", result, hex.EncodeToString(sum[:])
	h[len(h)-2] = o
	return h
}

// records returns n tasks' histories as records, each marshalled, named
// prefix and their number, from sequence *seq on.
func records(t *testing.T, prefix string, n int, history func(int) []event.Payload, seq *uint64) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		for _, p := range history(i) {
			*seq++
			b, err := proto.Marshal(&stewardv1.EventRecord{Sequence: *seq, Event: stewardtest.Event(t, fmt.Sprint(prefix, i), p)})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// apply decodes each record and applies it to views.
func apply(t *testing.T, views *state.Projection, recs [][]byte) {
	t.Helper()
	for _, b := range recs {
		rec := &stewardv1.EventRecord{}
		if err := proto.Unmarshal(b, rec); err != nil {
			t.Fatal(err)
		}
		if err := views.Apply(rec); err != nil {
			t.Fatal(err)
		}
	}
	if views.Rejected() > 0 {
		t.Fatalf("%d events refused", views.Rejected())
	}
}

// TestMemoryPerTask measures what the state plane's views hold in live
// heap per task: a running task's whole view, an ended one's, and an
// ended one's stub once evicted (docs/capacity.md). N tasks of each,
// STEWARD_MEMORY_TASKS (10,000 for the documented run; 2,000 by default).
// Ended tasks are small ones and ones with a 4 KiB result inline; it
// asserts a stub costs less than a whole view.
//
//	STEWARD_MEMORY_TASKS=10000 go test -count=1 -run TestMemoryPerTask -v ./services/state/
func TestMemoryPerTask(t *testing.T) {
	n := 2000
	if s := os.Getenv("STEWARD_MEMORY_TASKS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			t.Fatalf("STEWARD_MEMORY_TASKS=%q is not a number of tasks", s)
		}
	}
	for name, history := range map[string]func(int) []event.Payload{"small": endedHistory, "4 KiB result": resultHistory} {
		runningKB, whole, stub := measureViews(t, n, history)
		t.Logf("%d tasks each, ended ones with a %s: KB per running task %.2f (%d running: %.1f MB of views); per ended task, whole %.2f, evicted %.2f",
			n, name, runningKB, 10_000, runningKB*10_000/1024, whole, stub)
		if stub >= whole {
			t.Errorf("an evicted task with a %s holds %.2f KB, not less than its whole view's %.2f KB", name, stub, whole)
		}
	}
}

// measureViews folds n running tasks, then n ended ones of history, then
// evicts those, and returns the live heap each running task, each whole
// ended one and each evicted one holds, in KB.
func measureViews(t *testing.T, n int, history func(int) []event.Payload) (running, whole, stub float64) {
	t.Helper()
	// The records as bytes, each decoded as it is applied: what the views
	// keep of them is theirs alone. No NATS server in the process: its
	// caches would be counted.
	var seq uint64
	hot, ended := records(t, "r", n, runningHistory, &seq), records(t, "e", n, history, &seq)
	views := state.NewProjection(slog.New(slog.DiscardHandler))
	h0 := heapAfterGC()
	apply(t, views, hot)
	h1 := heapAfterGC()
	apply(t, views, ended)
	h2 := heapAfterGC()
	evicted := views.Evict(time.Now().Add(time.Hour))
	h3 := heapAfterGC()
	runtime.KeepAlive(hot) // else freed between the counts, as views would be
	runtime.KeepAlive(ended)
	runtime.KeepAlive(views)
	if evicted != n {
		t.Fatalf("%d tasks evicted, want %d", evicted, n)
	}
	per := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) / 1024 }
	return per(h0, h1), per(h1, h2), per(h1, h3)
}
