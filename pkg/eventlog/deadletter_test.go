package eventlog_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// deadLetters lists every record of l.
func deadLetters(t *testing.T, l *eventlog.Log) []eventlog.DeadLetter {
	t.Helper()
	list, more, err := l.ListDeadLetters(context.Background(), eventlog.DeadLetterKey{}, 1000)
	if err != nil || more {
		t.Fatalf("list dead letters: more %v, %v", more, err)
	}
	return list
}

// waitDeadLetters waits until l's records satisfy ok, and returns them.
func waitDeadLetters(t *testing.T, l *eventlog.Log, ok func([]eventlog.DeadLetter) bool) []eventlog.DeadLetter {
	t.Helper()
	var list []eventlog.DeadLetter
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		list = deadLetters(t, l)
		return ok(list), fmt.Sprintf("dead letters %+v", list)
	})
	return list
}

func metricWant(lines ...string) *strings.Reader {
	return strings.NewReader(`
# HELP steward_dead_letters Events set aside on the dead-letter stream and not replayed, by the consumer that set them aside (reader: the log's readers; unknown: records that predate the consumer's name).
# TYPE steward_dead_letters gauge
` + strings.Join(lines, "\n") + "\n")
}

// TestADeadLetterIsListedCountedAndReplayed: a reaction that fails for good
// sets its event aside under its consumer's name; the metric counts it; a
// replay while the cause remains records the new failure; once the cause
// is gone, a replay runs the reaction once more and the record shows
// replayed, after which a replay is refused.
func TestADeadLetterIsListedCountedAndReplayed(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	var calls atomic.Int32
	var broken atomic.Bool
	broken.Store(true)
	sub, err := l.React(ctx, "flaky", eventlog.OnRecord[*stewardv1.TaskStarted](func(context.Context, *stewardv1.EventRecord) error {
		calls.Add(1)
		if broken.Load() {
			return errs.New(errs.FailedPrecondition, "the cause is still there")
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	rec, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "dl"}, &stewardv1.TaskStarted{}))
	if err != nil {
		t.Fatal(err)
	}
	list := waitDeadLetters(t, l, func(d []eventlog.DeadLetter) bool { return len(d) == 1 })
	d := list[0]
	if d.Consumer != "flaky" || d.Sequence != rec.Sequence || d.TaskID != "dl" || d.Type != event.TypeTaskStarted ||
		!strings.Contains(d.Reason, "the cause is still there") || d.State != eventlog.DeadLetterWaiting || d.At.IsZero() {
		t.Fatalf("dead letter = %+v", d)
	}
	c := eventlog.NewDeadLetterCollector(l, time.Second)
	if err := testutil.CollectAndCompare(c, metricWant(`steward_dead_letters{consumer="flaky"} 1`)); err != nil {
		t.Fatal(err)
	}

	if _, err := l.RequestReplay(ctx, rec.Sequence, "flaky"); err != nil {
		t.Fatal(err)
	}
	failed := waitDeadLetters(t, l, func(d []eventlog.DeadLetter) bool { return d[0].State == eventlog.DeadLetterReplayFailed })
	if !strings.Contains(failed[0].ReplayError, "the cause is still there") || calls.Load() != 2 {
		t.Fatalf("after a failed replay: %+v, %d calls", failed[0], calls.Load())
	}

	broken.Store(false)
	if _, err := l.RequestReplay(ctx, rec.Sequence, "flaky"); err != nil {
		t.Fatal(err)
	}
	waitDeadLetters(t, l, func(d []eventlog.DeadLetter) bool { return d[0].State == eventlog.DeadLetterReplayed })
	if n := calls.Load(); n != 3 {
		t.Fatalf("the reaction ran %d times, want 3: once, a failed replay, a replay", n)
	}
	if err := testutil.CollectAndCompare(c, metricWant(`steward_dead_letters{consumer="flaky"} 0`)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RequestReplay(ctx, rec.Sequence, "flaky"); errs.CodeOf(err) != errs.FailedPrecondition {
		t.Fatalf("a second replay: %v, want failed precondition", err)
	}
	if _, err := l.RequestReplay(ctx, rec.Sequence+100, "flaky"); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("a replay of nothing: %v, want not found", err)
	}
}

// TestTwoConsumersSetTheSameEventAside: each consumer's record is kept,
// and each replays to its own reactions only.
func TestTwoConsumersSetTheSameEventAside(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	calls := map[string]*atomic.Int32{"one": {}, "two": {}}
	for name, n := range calls {
		sub, err := l.React(ctx, name, eventlog.OnRecord[*stewardv1.TaskStarted](func(context.Context, *stewardv1.EventRecord) error {
			if n.Add(1) == 1 {
				return errs.New(errs.Invalid, "%s refuses", name)
			}
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Stop()
	}
	rec, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "both"}, &stewardv1.TaskStarted{}))
	if err != nil {
		t.Fatal(err)
	}
	list := waitDeadLetters(t, l, func(d []eventlog.DeadLetter) bool { return len(d) == 2 })
	if list[0].Consumer != "one" || list[1].Consumer != "two" || list[0].Sequence != rec.Sequence || list[1].Sequence != rec.Sequence ||
		!strings.Contains(list[1].Reason, "two refuses") {
		t.Fatalf("dead letters = %+v", list)
	}
	page, more, err := l.ListDeadLetters(ctx, eventlog.DeadLetterKey{}, 1)
	if err != nil || !more || len(page) != 1 || page[0].Consumer != "one" {
		t.Fatalf("first page: %+v, more %v, %v", page, more, err)
	}
	if page, more, err = l.ListDeadLetters(ctx, page[0].DeadLetterKey, 1); err != nil || more || len(page) != 1 || page[0].Consumer != "two" {
		t.Fatalf("second page: %+v, more %v, %v", page, more, err)
	}
	if _, err := l.RequestReplay(ctx, rec.Sequence, "two"); err != nil {
		t.Fatal(err)
	}
	list = waitDeadLetters(t, l, func(d []eventlog.DeadLetter) bool { return d[1].State == eventlog.DeadLetterReplayed })
	if list[0].State != eventlog.DeadLetterWaiting || calls["one"].Load() != 1 || calls["two"].Load() != 2 {
		t.Fatalf("after replaying two's: %+v; calls one %d, two %d", list, calls["one"].Load(), calls["two"].Load())
	}
}

// TestAnOlderRecordStillLists: a record written before records named their
// consumer (steward.deadletter.<seq>) is listed and counted without one,
// and cannot be replayed, having no consumer to go to; neither can a
// reader's.
func TestAnOlderRecordStillLists(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	subject := l.TaskSubject("old", event.TypeTaskStarted)
	old := &nats.Msg{Subject: l.Config().DeadLetterPrefix + ".7", Data: []byte("bytes"), Header: nats.Header{
		eventlog.HeaderOrigSubject: {subject}, eventlog.HeaderOrigSequence: {"7"}, eventlog.HeaderError: {"an old reason"},
	}}
	if _, err := bus.JS.PublishMsg(ctx, old); err != nil {
		t.Fatal(err)
	}
	list := deadLetters(t, l)
	if len(list) != 1 || list[0].Consumer != "" || list[0].Sequence != 7 || list[0].TaskID != "old" || list[0].Reason != "an old reason" {
		t.Fatalf("dead letters = %+v", list)
	}
	all, err := l.DeadLetters(ctx)
	if err != nil || len(all) != 1 || all[0].Consumer != "" || all[0].Subject != subject {
		t.Fatalf("DeadLetters = %+v, %v", all, err)
	}
	if err := testutil.CollectAndCompare(eventlog.NewDeadLetterCollector(l, time.Second), metricWant(`steward_dead_letters{consumer="unknown"} 1`)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RequestReplay(ctx, 7, ""); errs.CodeOf(err) != errs.FailedPrecondition {
		t.Fatalf("replay of an older record: %v, want failed precondition", err)
	}

	// A reader sets aside what it cannot decode, as "reader".
	garbage := &nats.Msg{Subject: l.TaskSubject("bad", event.TypeTaskStarted), Data: []byte("not a protobuf \xff")}
	if _, err := bus.JS.PublishMsg(ctx, garbage); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = l.Follow(fctx, "", 0, func(*stewardv1.EventRecord) error { return nil }, nil)
	}()
	list = waitDeadLetters(t, l, func(d []eventlog.DeadLetter) bool { return len(d) == 2 })
	reader := list[0] // sequence 1, before the older record's 7
	if reader.Consumer != eventlog.ReaderConsumer {
		t.Fatalf("dead letters = %+v", list)
	}
	if _, err := l.RequestReplay(ctx, reader.Sequence, eventlog.ReaderConsumer); errs.CodeOf(err) != errs.FailedPrecondition {
		t.Fatalf("replay of a reader's record: %v, want failed precondition", err)
	}
}
