package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

func mustEvent(t testing.TB, m event.Meta, p event.Payload) *stewardv1.Event {
	t.Helper()
	ev, err := event.New(m, p)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// lastHead reads a task's head the slow, honest way.
func lastHead(t testing.TB, l *eventlog.Log, taskID string) eventlog.Head {
	recs, err := l.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		return eventlog.Head{}
	}
	last := recs[len(recs)-1]
	return eventlog.Head{Sequence: last.Sequence, Hash: last.Event.Hash}
}

func TestConcurrentAppendsOneWinnerPerSequence(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	const writers, perWriter = 8, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts := 0
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				for {
					head := lastHead(t, l, "race")
					ev := mustEvent(t, event.Meta{TaskID: "race", ID: event.ID("w", string(rune('a'+w)), string(rune('a'+i)))}, &stewardv1.TaskStarted{})
					_, err := l.Append(ctx, head, ev)
					if errors.Is(err, eventlog.ErrConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	recs, err := l.Read(ctx, "race") // Read verifies the whole chain.
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != writers*perWriter {
		t.Fatalf("stored %d events, want %d", len(recs), writers*perWriter)
	}
	ids := map[string]bool{}
	for _, r := range recs {
		if ids[r.Event.EventId] {
			t.Fatalf("event %s stored twice", r.Event.EventId)
		}
		ids[r.Event.EventId] = true
	}
	t.Logf("%d appends, %d conflicts retried", len(recs), conflicts)
}

func TestRetriedAppendIsStoredOnce(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	first := mustEvent(t, event.Meta{TaskID: "t1", ID: "created"}, &stewardv1.TaskCreated{})
	rec1, err := l.Append(ctx, eventlog.Head{}, first)
	if err != nil {
		t.Fatal(err)
	}
	// The retry carries the same id and the same expected sequence: the
	// server answers with a sequence error (10071), not a duplicate.
	retry := mustEvent(t, event.Meta{TaskID: "t1", ID: "created"}, &stewardv1.TaskCreated{})
	rec2, err := l.Append(ctx, eventlog.Head{}, retry)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if rec2.Sequence != rec1.Sequence {
		t.Fatalf("retry returned seq %d, want %d", rec2.Sequence, rec1.Sequence)
	}
	// A different event at the same stale head is a conflict.
	other := mustEvent(t, event.Meta{TaskID: "t1", ID: "other"}, &stewardv1.TaskCreated{})
	if _, err := l.Append(ctx, eventlog.Head{}, other); !errs.Is(err, errs.Conflict) {
		t.Fatalf("stale head: err = %v, want conflict", err)
	}
	recs, err := l.Read(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("stored %d events, want 1", len(recs))
	}
}

// TestATriedAppendLosesWithoutLooking: TryAppend on a head that is no
// longer the chain's last is a conflict even for a retry of an event
// stored before (which Append finds and returns; a single server checks
// the head before the message id), and stores nothing; on the head, it
// stores as Append does.
func TestATriedAppendLosesWithoutLooking(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	first := mustEvent(t, event.Meta{TaskID: "t1", ID: "created"}, &stewardv1.TaskCreated{})
	rec, err := l.TryAppend(ctx, eventlog.Head{}, first)
	if err != nil {
		t.Fatal(err)
	}
	retry := mustEvent(t, event.Meta{TaskID: "t1", ID: "created"}, &stewardv1.TaskCreated{})
	if _, err := l.TryAppend(ctx, eventlog.Head{}, retry); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("a retry on the old head: err = %v, want ErrConflict", err)
	}
	next := mustEvent(t, event.Meta{TaskID: "t1", ID: "started"}, &stewardv1.TaskStarted{})
	if _, err := l.TryAppend(ctx, eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}, next); err != nil {
		t.Fatalf("on the head: %v", err)
	}
	recs, err := l.Read(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Event.EventId != "created" || recs[1].Event.EventId != "started" {
		t.Fatalf("stored %v, want created and started", recs)
	}
}

func TestAppendRejectsBadTaskIDs(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	for _, id := range []string{"", "a.b", "a*", "a>", "a b", string(make([]byte, 65))} {
		ev := mustEvent(t, event.Meta{TaskID: id}, &stewardv1.TaskStarted{})
		if _, err := l.Append(context.Background(), eventlog.Head{}, ev); !errs.Is(err, errs.Invalid) {
			t.Errorf("task id %q: err = %v, want invalid", id, err)
		}
	}
}

func TestUndecodableEventIsSetAsideAndConsumerGoesOn(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 10)
	sub, err := l.React(ctx, "test", eventlog.OnRecord[*stewardv1.TaskStarted](func(_ context.Context, rec *stewardv1.EventRecord) error {
		got <- rec.Event.TaskId
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	garbage := &nats.Msg{Subject: l.TaskSubject("bad", event.TypeTaskStarted), Data: []byte("not a protobuf \xff\xff"), Header: nats.Header{eventlog.HeaderType: {event.TypeTaskStarted}}}
	if _, err := bus.JS.PublishMsg(ctx, garbage); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "good"}, &stewardv1.TaskStarted{})); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id != "good" {
			t.Fatalf("handler saw task %q, want good", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("consumer stopped at the bad message")
	}
	// Tasks are handled in parallel lanes: the bad one may still be on
	// its way aside.
	var dead []eventlog.SetAside
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		var err error
		if dead, err = l.DeadLetters(ctx); err != nil {
			t.Fatal(err)
		}
		return len(dead) > 0, "no dead letter"
	})
	if len(dead) != 1 || dead[0].Subject != l.TaskSubject("bad", event.TypeTaskStarted) || dead[0].Reason == "" {
		t.Fatalf("dead letters = %+v, want the one bad message with a reason", dead)
	}
}

func TestReactionErrorsAreRedelivered(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	calls := 0
	done := make(chan struct{})
	sub, err := l.React(ctx, "flaky", eventlog.OnRecord[*stewardv1.TaskStarted](func(context.Context, *stewardv1.EventRecord) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return errors.New("not yet")
		}
		close(done)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	if _, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "t"}, &stewardv1.TaskStarted{})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a failed reaction was not redelivered")
	}
}

func TestFollowDeliversInOrderFromASequence(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	head := eventlog.Head{}
	var seqs []uint64
	for range 5 {
		rec, err := l.Append(ctx, head, mustEvent(t, event.Meta{TaskID: "f"}, &stewardv1.TaskStarted{}))
		if err != nil {
			t.Fatal(err)
		}
		head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
		seqs = append(seqs, rec.Sequence)
	}
	var got []uint64
	err := l.Follow(ctx, "f", seqs[1], func(rec *stewardv1.EventRecord) error {
		got = append(got, rec.Sequence)
		if len(got) == 3 {
			return errDone
		}
		return nil
	}, nil)
	if !errors.Is(err, errDone) {
		t.Fatal(err)
	}
	if want := seqs[2:]; len(got) != 3 || got[0] != want[0] || got[2] != want[2] {
		t.Fatalf("followed %v, want %v", got, want)
	}
}

var errDone = errors.New("done")

// TestFollowTypesDeliversThoseTypesOnly follows two types over two tasks:
// it gets their events, in order, and nothing else, and LastOfTypes says
// where such a reader is current.
func TestFollowTypesDeliversThoseTypesOnly(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	types := []string{event.TypeTaskPaused, event.TypeTaskResumed}
	if last, err := l.LastOfTypes(ctx, types...); err != nil || last != 0 {
		t.Fatalf("LastOfTypes on an empty log = %d, %v", last, err)
	}
	var want []uint64
	for _, task := range []string{"a", "b"} {
		head := eventlog.Head{}
		for _, p := range []event.Payload{&stewardv1.TaskStarted{}, &stewardv1.TaskPaused{}, &stewardv1.TaskResumed{}, &stewardv1.TaskCancelled{}} {
			rec, err := l.Append(ctx, head, mustEvent(t, event.Meta{TaskID: task}, p))
			if err != nil {
				t.Fatal(err)
			}
			head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
			if typ := rec.Event.Type; typ == event.TypeTaskPaused || typ == event.TypeTaskResumed {
				want = append(want, rec.Sequence)
			}
		}
	}
	last, err := l.LastOfTypes(ctx, types...)
	if err != nil || last != want[len(want)-1] {
		t.Fatalf("LastOfTypes = %d, %v; want %d", last, err, want[len(want)-1])
	}
	var got []uint64
	err = l.FollowTypes(ctx, types, 0, func(rec *stewardv1.EventRecord) error {
		if typ := rec.Event.Type; typ != event.TypeTaskPaused && typ != event.TypeTaskResumed {
			t.Errorf("followed a %s event", typ)
		}
		got = append(got, rec.Sequence)
		if rec.Sequence == last {
			return errDone
		}
		return nil
	}, nil)
	if !errors.Is(err, errDone) || !slices.Equal(got, want) {
		t.Fatalf("followed %v (%v), want %v", got, err, want)
	}
}

// TestEventUnderAnotherTasksSubjectIsRefused stores a validly sealed event
// of task "victim" under task "attacker"'s subject.
func TestEventUnderAnotherTasksSubjectIsRefused(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	ev := mustEvent(t, event.Meta{TaskID: "victim"}, &stewardv1.TaskCreated{})
	data, err := event.Seal(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.JS.Publish(ctx, l.TaskSubject("attacker", event.TypeTaskCreated), data); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(ctx, "attacker"); !errs.Is(err, errs.Corrupt) {
		t.Fatalf("Read = %v, want corrupt", err)
	}
	var followed int
	var bad error
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = l.Follow(fctx, "", 0, func(*stewardv1.EventRecord) error { followed++; return nil }, func(_ uint64, err error) { bad = err; cancel() })
	if followed != 0 || bad == nil {
		t.Fatalf("Follow delivered %d events and reported %v; want the event refused", followed, bad)
	}
}

// TestPermanentReactionFailureIsSetAside: a handler that fails for good is
// not retried forever; the event goes to the dead letters.
func TestPermanentReactionFailureIsSetAside(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	calls := 0
	sub, err := l.React(ctx, "strict", eventlog.OnRecord[*stewardv1.TaskStarted](func(context.Context, *stewardv1.EventRecord) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return errs.New(errs.FailedPrecondition, "never going to work")
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	if _, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "t"}, &stewardv1.TaskStarted{})); err != nil {
		t.Fatal(err)
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		dead, err := l.DeadLetters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(dead) == 1, fmt.Sprintf("%d dead letters", len(dead))
	})
	dead, err := l.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dead[0].Reason, "never going to work") {
		t.Fatalf("dead letter reason %q", dead[0].Reason)
	}
	// Once the consumer has acknowledged the event, set aside, it cannot
	// be delivered again.
	bus.Settle(t, l.Config().Stream, "strict")
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("handler ran %d times, want 1", calls)
	}
}

// TestEachTypeHasItsSubjectAndOneChain: a task's events are stored on a
// subject per type, and an append is conditional on the task's last
// sequence across all of them: one based on a head from before an event of
// another type is refused.
func TestEachTypeHasItsSubjectAndOneChain(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	created, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "t1"}, &stewardv1.TaskCreated{}))
	if err != nil {
		t.Fatal(err)
	}
	afterCreated := eventlog.Head{Sequence: created.Sequence, Hash: created.Event.Hash}
	if _, err := l.Append(ctx, afterCreated, mustEvent(t, event.Meta{TaskID: "t1"}, &stewardv1.TaskStarted{})); err != nil {
		t.Fatal(err)
	}
	_, err = l.Append(ctx, afterCreated, mustEvent(t, event.Meta{TaskID: "t1"}, &stewardv1.TaskPaused{Reason: "stale"}))
	if !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("an append on task.paused from before task.started: %v, want a conflict", err)
	}
	raws, err := l.ReadRaw(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, r := range raws {
		subjects = append(subjects, r.Subject)
	}
	want := []string{l.TaskSubject("t1", event.TypeTaskCreated), l.TaskSubject("t1", event.TypeTaskStarted)}
	if !slices.Equal(subjects, want) {
		t.Fatalf("stored under %v, want %v", subjects, want)
	}
	if _, err := l.Read(ctx, "t1"); err != nil {
		t.Fatalf("the chain across type subjects does not verify: %v", err)
	}
}

// TestReactionsAreTyped: On hands a reaction its payload, and reactions to
// one type run in the order given; the consumer asks only for their types.
func TestReactionsAreTyped(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	sub, err := l.React(ctx, "typed",
		eventlog.On(func(_ context.Context, _ *stewardv1.EventRecord, p *stewardv1.TaskPaused) error {
			note("first:" + p.Reason)
			return nil
		}),
		eventlog.OnRecord[*stewardv1.TaskPaused](func(context.Context, *stewardv1.EventRecord) error {
			note("second")
			return nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	created, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "t1"}, &stewardv1.TaskCreated{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, eventlog.Head{Sequence: created.Sequence, Hash: created.Event.Hash}, mustEvent(t, event.Meta{TaskID: "t1"}, &stewardv1.TaskPaused{Reason: "why"})); err != nil {
		t.Fatal(err)
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(order, []string{"first:why", "second"}), fmt.Sprint(order)
	})
	if _, err := l.React(ctx, "none"); !errs.Is(err, errs.Invalid) {
		t.Errorf("React with no reactions: %v, want invalid", err)
	}
}

// TestASoleConsumerTakesUpWhatItsPredecessorHeld: an event delivered to a
// process that died before acknowledging it comes again to its successor
// at once when the successor is the consumer's only reader, not after the
// ack wait.
func TestASoleConsumerTakesUpWhatItsPredecessorHeld(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, bus.JS, eventlog.Config{SoleConsumer: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "t1"}, &stewardv1.TaskCreated{})); err != nil {
		t.Fatal(err)
	}
	// The predecessor: the same durable, which takes the event and dies
	// holding it.
	cons, err := bus.JS.CreateOrUpdateConsumer(ctx, l.Config().Stream, jetstream.ConsumerConfig{
		Durable: "sole", AckPolicy: jetstream.AckExplicitPolicy, AckWait: eventlog.ReactionAckWait,
		FilterSubjects: []string{l.TypeFilter(event.TypeTaskCreated)},
	})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range batch.Messages() {
	}
	got := make(chan struct{}, 1)
	start := time.Now()
	sub, err := l.React(ctx, "sole", eventlog.OnRecord[*stewardv1.TaskCreated](func(context.Context, *stewardv1.EventRecord) error {
		got <- struct{}{}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	select {
	case <-got:
		if d := time.Since(start); d >= eventlog.ReactionAckWait/2 {
			t.Errorf("the held event came again after %s; want at once", d)
		}
	case <-time.After(2 * eventlog.ReactionAckWait):
		t.Fatal("the held event never came again")
	}
}

// TestATasksEventsAreHandledInOrderAcrossTypes: each type has its own
// subject, yet a task's events reach one consumer's reactions one at a
// time, in the order they were appended; a reaction to a later type never
// overtakes one to an earlier. Found when a release and the pass-on it
// must precede ran side by side.
func TestATasksEventsAreHandledInOrderAcrossTypes(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	// The reaction to a task's first event holds until the test has seen
	// the consumer deliver the second: a reaction to it that ran beside
	// the first would have started by then.
	createdIn, proceed := make(chan string), make(chan struct{})
	releasedIn, createdDone := make(chan string, 1), make(chan bool)
	sub, err := l.React(ctx, "ordered",
		eventlog.OnRecord[*stewardv1.TaskCreated](func(_ context.Context, rec *stewardv1.EventRecord) error {
			createdIn <- rec.Event.TaskId
			<-proceed
			createdDone <- len(releasedIn) > 0 // overtaken
			return nil
		}),
		// Another kind of event than the first, so another type prefix.
		eventlog.OnRecord[*stewardv1.BudgetReleased](func(_ context.Context, rec *stewardv1.EventRecord) error {
			releasedIn <- rec.Event.TaskId
			return nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	const tasks = 4 // each lands on another lane than its first event's by 7 chances in 8, were lanes per subject
	overtaken := 0
	for i := range tasks {
		id := fmt.Sprintf("ordered-%d", i)
		created, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: id}, &stewardv1.TaskCreated{}))
		if err != nil {
			t.Fatal(err)
		}
		<-createdIn
		released, err := l.Append(ctx, eventlog.Head{Sequence: created.Sequence, Hash: created.Event.Hash}, mustEvent(t, event.Meta{TaskID: id}, &stewardv1.BudgetReleased{Tokens: 1}))
		if err != nil {
			t.Fatal(err)
		}
		stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
			cons, err := bus.JS.Consumer(ctx, l.Config().Stream, "ordered")
			if err != nil {
				return false, err.Error()
			}
			ci, err := cons.Info(ctx)
			if err != nil {
				return false, err.Error()
			}
			return ci.Delivered.Stream >= released.Sequence, fmt.Sprintf("delivered to %d, want %d", ci.Delivered.Stream, released.Sequence)
		})
		proceed <- struct{}{}
		if <-createdDone {
			overtaken++
		}
		<-releasedIn
	}
	if overtaken != 0 {
		t.Fatalf("%d of %d tasks had a later event handled while their TaskCreated reaction still ran", overtaken, tasks)
	}
}
