package state

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestASnapshotTakenWhileTheFoldGoesOn: the fold applies events between
// the snapshot's header and its entries (WriteSnapshot lets it), so some
// entries hold events past the covered sequence. A projection loaded from
// it and fed the log after that sequence skips what its entries hold and
// ends equal to the live one, refused events counted once.
func TestASnapshotTakenWhileTheFoldGoesOn(t *testing.T) {
	var chains [][]*stewardv1.EventRecord
	for i := range 3 * snapshotBatch / 2 { // two batches
		c := &stewardv1.TaskContract{Intent: fmt.Sprint("task ", i), DesiredOutcome: "done", RequesterRef: "user:a", AccountableOwnerRef: "user:a"}
		h := []event.Payload{&stewardv1.TaskCreated{Contract: c}, &stewardv1.TaskStarted{}, &stewardv1.TaskPaused{Reason: "r"}}
		if i%7 == 0 {
			h = append(h, &stewardv1.TaskCancelled{}, &stewardv1.TaskStarted{}, &stewardv1.TaskStarted{}) // refused twice
		}
		chains = append(chains, stewardtest.History(t, fmt.Sprint("t", i), h...))
	}
	// Interleave the tasks' events, a turn each, as the log holds them.
	var log []*stewardv1.EventRecord
	for step := range 6 {
		for _, c := range chains {
			if step < len(c) {
				c[step].Sequence = uint64(len(log) + 1)
				log = append(log, c[step])
			}
		}
	}
	quiet := slog.New(slog.DiscardHandler)
	live := NewProjection(quiet)
	cut := len(log) / 2
	for _, rec := range log[:cut] {
		_ = live.Apply(rec)
	}
	h := live.SnapshotHeader("test", time.Unix(0, 0))
	for _, rec := range log[cut : cut+len(log)/4] { // the fold goes on
		_ = live.Apply(rec)
	}
	var hot, stubs bytes.Buffer
	if err := live.WriteSnapshot(&hot, &stubs, h); err != nil {
		t.Fatal(err)
	}
	for _, rec := range log[cut+len(log)/4:] {
		_ = live.Apply(rec)
	}
	loaded, rh := loadWritten(t, quiet, &hot, &stubs)
	for _, rec := range log[rh.CoveredSequence:] {
		_ = loaded.Apply(rec)
	}
	if rh.CoveredSequence != uint64(cut) {
		t.Fatalf("covered %d, want %d", rh.CoveredSequence, cut)
	}
	if loaded.Rejected() != live.Rejected() || live.Rejected() == 0 {
		t.Errorf("refused: loaded %d, live %d", loaded.Rejected(), live.Rejected())
	}
	want, got := live.Snapshot(), loaded.Snapshot()
	if len(got) != len(want) {
		t.Fatalf("loaded %d views, live %d", len(got), len(want))
	}
	for id, w := range want {
		if !proto.Equal(w, got[id]) {
			t.Fatalf("task %s:\n live   %v\n loaded %v", id, w, got[id])
		}
	}
	if len(loaded.broken) != len(live.broken) {
		t.Errorf("broken: loaded %d, live %d", len(loaded.broken), len(live.broken))
	}
}

// loadWritten loads a projection from a snapshot's two parts as a plane
// does, the stubs after the first part, and returns it with the header.
func loadWritten(t *testing.T, logger *slog.Logger, hot, stubs *bytes.Buffer) (*Projection, *stewardv1.ViewsSnapshotHeader) {
	t.Helper()
	h, entries, err := ReadSnapshot(hot)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := ReadStubs(stubs)
	if err != nil {
		t.Fatal(err)
	}
	loaded := NewProjection(logger)
	loaded.load(h, entries)
	loaded.expectStubs()
	loaded.installStubs(rest, h.CoveredSequence, nil)
	return loaded, h
}
