package state

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// coldRecords is a task's history as a cold read finds it.
type coldRecords []*stewardv1.EventRecord

func (c coldRecords) Events(context.Context, string, string) ([]*stewardv1.EventRecord, error) {
	return c, nil
}

func finding(id string) *stewardv1.FindingRecorded {
	return &stewardv1.FindingRecorded{Finding: &stewardv1.Finding{FindingId: id, Kind: stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION, Description: "found late"}}
}

// TestARevivedViewIsNotAheadOfTheFold: two late findings are appended to
// an evicted task; the fold has applied the first (kept pending) when the
// revival reads the log, which already holds the second. The view
// revived is the fold through what the projection applied, so that when
// the second arrives it links: the task is not broken, and its view is
// the fold of its whole history, each finding once.
func TestARevivedViewIsNotAheadOfTheFold(t *testing.T) {
	c := &stewardv1.TaskContract{Intent: "late", DesiredOutcome: "done", RequesterRef: "user:a", AccountableOwnerRef: "user:a"}
	recs := stewardtest.History(t, "t", &stewardv1.TaskCreated{Contract: c}, &stewardv1.TaskStarted{},
		&stewardv1.TaskCancelled{Reason: "r"}, finding("f1"), finding("f2"))
	views := NewProjection(slog.New(slog.DiscardHandler))
	for _, r := range recs[:3] {
		_ = views.Apply(r)
	}
	if n := views.Evict(time.Now().Add(24 * time.Hour)); n != 1 {
		t.Fatalf("%d evicted, want 1", n)
	}
	_ = views.Apply(recs[3]) // pending: the stub cannot fold it
	p := &Plane{views: views, cold: coldRecords(recs), coldReads: make(chan struct{}, maxColdReads), logger: slog.New(slog.DiscardHandler)}
	p.revive(context.Background())
	_ = views.Apply(recs[4])
	if views.Rejected() != 0 || views.broken["t"] != "" {
		t.Fatalf("the task broke: %q (%d refused)", views.broken["t"], views.Rejected())
	}
	want := NewProjection(slog.New(slog.DiscardHandler))
	for _, r := range recs {
		_ = want.Apply(r)
	}
	got, err := views.Get("t")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := want.Get("t")
	if protojson.Format(got) != protojson.Format(w) {
		t.Errorf("revived view:\n%s\nwant the fold of the log:\n%s", protojson.Format(got), protojson.Format(w))
	}
}

// TestASnapshotKeepsAStubsPendingEvent: a snapshot taken while a late
// finding waits to revive its evicted task (the stub cannot fold it) is
// loaded by a plane that replays the log only after the snapshot's
// sequence, so it never sees that finding again; the load still revives
// the task, and its view is the fold of the whole history, the finding
// in it.
func TestASnapshotKeepsAStubsPendingEvent(t *testing.T) {
	c := &stewardv1.TaskContract{Intent: "late", DesiredOutcome: "done", RequesterRef: "user:a", AccountableOwnerRef: "user:a"}
	recs := stewardtest.History(t, "t", &stewardv1.TaskCreated{Contract: c}, &stewardv1.TaskStarted{},
		&stewardv1.TaskCancelled{Reason: "r"}, finding("f1"))
	logger := slog.New(slog.DiscardHandler)
	views := NewProjection(logger)
	for _, r := range recs[:3] {
		_ = views.Apply(r)
	}
	views.Evict(time.Now().Add(24 * time.Hour))
	_ = views.Apply(recs[3]) // pending; no revival yet
	var hot, stubs bytes.Buffer
	if err := views.WriteSnapshot(&hot, &stubs, views.SnapshotHeader("b", time.Now())); err != nil {
		t.Fatal(err)
	}
	if stubs.Len() == 0 {
		t.Fatal("the evicted task is not in the snapshot's stubs part")
	}
	loaded, _ := loadWritten(t, logger, &hot, &stubs)
	p := &Plane{views: loaded, cold: coldRecords(recs), coldReads: make(chan struct{}, maxColdReads), logger: logger}
	p.revive(context.Background())
	want := NewProjection(logger)
	for _, r := range recs {
		_ = want.Apply(r)
	}
	got, err := loaded.Get("t")
	if err != nil {
		t.Fatalf("the task is still a stub: %v", err)
	}
	w, _ := want.Get("t")
	if protojson.Format(got) != protojson.Format(w) {
		t.Errorf("loaded view:\n%s\nwant the fold of the log:\n%s", protojson.Format(got), protojson.Format(w))
	}
}
