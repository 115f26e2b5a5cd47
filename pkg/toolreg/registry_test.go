package toolreg_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/toolreg"
)

func register(t *testing.T, log *eventlog.Log, head *eventlog.Head, version string) {
	t.Helper()
	c := valid()
	c.Version = version
	ev, err := event.New(event.Meta{ID: event.ID("tool", c.Name, version)}, &stewardv1.ToolRegistered{Contract: c})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := log.Append(context.Background(), *head, ev)
	if err != nil {
		t.Fatal(err)
	}
	*head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
}

func TestRegistryFollowsTheLog(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := toolreg.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	go r.Run(ctx, log)
	var head eventlog.Head
	for _, v := range []string{"1.2.0", "1.10.0", "1.9.9"} {
		register(t, log, &head, v)
	}
	// Lookup of a version registered a moment ago waits for the registry.
	e, err := r.Lookup(ctx, log, "", "search", "1.9.9")
	if err != nil || e.Tool.Contract.Version != "1.9.9" {
		t.Fatalf("lookup 1.9.9: %v, %v", e, err)
	}
	// Latest is by semantic version, not by registration order.
	if e, err := r.Lookup(ctx, log, "", "search", ""); err != nil || e.Tool.Contract.Version != "1.10.0" {
		t.Fatalf("latest: %v, %v", e, err)
	}
	if _, err := r.Lookup(ctx, log, "", "search", "2.0.0"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("unknown version: %v, want not found", err)
	}
	if got := r.List(""); len(got) != 1 || got[0].Contract.Version != "1.10.0" {
		t.Fatalf("list: %v", got)
	}
}

// TestAVersionPastTodaysLimitsStaysListed: a registration that passed the
// limits of the release that made it, but not today's, is kept and named
// unusable, never taken for unregistered. Found by an independent review.
func TestAVersionPastTodaysLimitsStaysListed(t *testing.T) {
	r := toolreg.New(slog.New(slog.DiscardHandler))
	c := &stewardv1.ToolContract{Name: "old", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		ParametersSchema: `{"properties":{"s":{"pattern":"[a-z]{1000}[a-z]{1000}"}}}`}
	if err := r.Apply(&stewardv1.EventRecord{Sequence: 1, Event: &stewardv1.Event{Payload: &stewardv1.Event_ToolRegistered{ToolRegistered: &stewardv1.ToolRegistered{Contract: c}}}}); err != nil {
		t.Fatal(err)
	}
	e, err := r.Get("", "old", "")
	if err != nil {
		t.Fatalf("the old version is gone: %v", err)
	}
	if e.Unusable == nil || !strings.Contains(e.Unusable.Error(), "instructions") {
		t.Errorf("unusable: %v, want the reason its schema no longer compiles", e.Unusable)
	}
}

// TestAsOfTakesTheLatestBeforeTheTask: a task created at a stream sequence
// takes the latest version registered before it, by semantic version, and
// never one registered after; LookupAsOf catches up with the log first.
func TestAsOfTakesTheLatestBeforeTheTask(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := toolreg.New(slog.New(slog.DiscardHandler))
	var head eventlog.Head
	register(t, log, &head, "1.10.0")
	register(t, log, &head, "1.9.0") // older by version, though later
	created := head.Sequence + 1     // a task created now
	register(t, log, &head, "2.0.0") // after the task
	// The registry starts behind: LookupAsOf waits until it has applied
	// every registration before the task.
	go r.Run(ctx, log)
	e, err := r.LookupAsOf(ctx, log, "", "search", created)
	if err != nil || e.Tool.Contract.Version != "1.10.0" {
		t.Fatalf("as of the task: %v, %v; want 1.10.0", e, err)
	}
	if e, err := r.AsOf("", "search", head.Sequence+1); err != nil || e.Tool.Contract.Version != "2.0.0" {
		t.Fatalf("as of a later task: %v, %v; want 2.0.0", e, err)
	}
	if _, err := r.AsOf("", "search", 1); !errs.Is(err, errs.NotFound) {
		t.Fatalf("as of a task older than every version: %v, want not found", err)
	}
}

// TestAsOfOrdersOtherVersionsByRegistration: versions that are not
// semantic are ordered by when they were registered, as Get's latest is.
func TestAsOfOrdersOtherVersionsByRegistration(t *testing.T) {
	r := toolreg.New(slog.New(slog.DiscardHandler))
	for seq, v := range map[uint64]string{3: "beta", 5: "alpha", 9: "gamma"} {
		c := valid()
		c.Version = v
		if err := r.Apply(&stewardv1.EventRecord{Sequence: seq, Event: &stewardv1.Event{Payload: &stewardv1.Event_ToolRegistered{ToolRegistered: &stewardv1.ToolRegistered{Contract: c}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if e, err := r.AsOf("", "search", 9); err != nil || e.Tool.Contract.Version != "alpha" {
		t.Fatalf("as of 9: %v, %v; want alpha, the last registered before", e, err)
	}
}

// TestLookupsShareTheEntry: every lookup of a version hands out the
// registry's one entry, not a copy; List hands out copies; and a reader
// that changes the shared tool is caught at the next lookup.
func TestLookupsShareTheEntry(t *testing.T) {
	r := toolreg.New(slog.New(slog.DiscardHandler))
	if err := r.Apply(&stewardv1.EventRecord{Sequence: 1, Event: &stewardv1.Event{Payload: &stewardv1.Event_ToolRegistered{ToolRegistered: &stewardv1.ToolRegistered{Contract: valid()}}}}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get("", "search", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := r.AsOf("", "search", 2); err != nil || again != got {
		t.Fatalf("AsOf: %v, %v; want Get's entry, shared", again, err)
	}
	if listed := r.List(""); len(listed) != 1 || listed[0] == got.Tool {
		t.Fatalf("List handed out %v; want a copy of the one tool", listed)
	}

	if !toolreg.GuardShared {
		return // the check is built with the race detector
	}
	got.Tool.Contract.Description = "changed" // what a reader must not do
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "tool search@1.0.0") {
			t.Fatalf("a changed shared tool went unnoticed: %v", r)
		}
	}()
	_, _ = r.Get("", "search", "")
}
