package timer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/timer"
)

// TestTimersOfTheSharedStreamMove: an upgrade from the stream every owner
// shared. Its pending schedule fires at its time from the owner's stream,
// a timer that fired there unacknowledged fires again, one acknowledged
// does not; another owner's stay where they are; and a second opening
// moves nothing twice.
func TestTimersOfTheSharedStreamMove(t *testing.T) {
	t.Parallel()
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	shared, err := bus.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: timer.DefaultStream, Subjects: []string{timer.DefaultPrefix + ".at.>", timer.DefaultPrefix + ".fired.>"},
		AllowMsgSchedules: true, AllowMsgTTL: true, AllowRollup: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	// As the version before set them.
	setShared := func(kind, id string, at time.Time) {
		t.Helper()
		token := timer.IDToken(id)
		msg := &nats.Msg{Subject: timer.DefaultPrefix + ".at." + kind + "." + token, Header: nats.Header{}, Data: []byte(id)}
		msg.Header.Set(timer.HeaderKind, kind)
		msg.Header.Set(timer.HeaderID, id)
		msg.Header.Set(timer.HeaderAt, at.UTC().Format(time.RFC3339Nano))
		if _, err := bus.JS.PublishMsg(ctx, msg, jetstream.WithScheduleAt(at.Truncate(time.Second).Add(time.Second)),
			jetstream.WithScheduleTarget(timer.DefaultPrefix+".fired."+kind+"."+token), jetstream.WithScheduleTTL(timer.FiredRetention)); err != nil {
			t.Fatal(err)
		}
	}
	// The consumer of before acknowledges "acked" and holds "unacked".
	old, err := bus.JS.CreateConsumer(ctx, timer.DefaultStream, jetstream.ConsumerConfig{
		Durable: "old", FilterSubjects: []string{timer.DefaultPrefix + ".fired.k.*"}, AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"acked", "unacked"} {
		setShared("k", id, time.Now())
		msg, err := old.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if msg.Headers().Get(timer.HeaderID) == "acked" {
			if err := msg.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	due := time.Now().Add(2 * time.Second)
	setShared("k", "pending", due)
	setShared("j", "other", time.Now().Add(time.Hour))

	got := make(chan timer.Fired, 10)
	for range 2 {
		tm, err := timer.Open(ctx, bus.JS, timer.Config{Logger: stewardtest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := tm.Run(ctx, "worker", []string{"k"}, func(_ context.Context, f timer.Fired) error {
			got <- f
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sub.Stop)
	}
	want := map[string]bool{"unacked": true, "pending": true}
	for len(want) > 0 {
		select {
		case f := <-got:
			if !want[f.ID] {
				t.Fatalf("fired %s, want only %v once each", f.ID, want)
			}
			delete(want, f.ID)
			if f.ID == "pending" && time.Now().Before(due) {
				t.Errorf("pending fired %s early", due.Sub(time.Now()))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("not fired: %v", want)
		}
	}
	bus.Settle(t, timer.Stream(timer.DefaultStream, "k"), "worker")
	select {
	case f := <-got:
		t.Errorf("fired %s again", f.ID)
	default:
	}
	if _, err := shared.GetLastMsgForSubject(ctx, timer.DefaultPrefix+".at.j."+timer.IDToken("other")); err != nil {
		t.Errorf("another owner's timer left the shared stream: %v", err)
	}
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		filter, subject string
		want            bool
	}{
		{"a.b", "a.b", true}, {"a.*", "a.b", true}, {"a.>", "a.b.c", true}, {">", "a", true},
		{"a.*", "a.b.c", false}, {"a.>", "a", false}, {"a.b", "a.c", false}, {"a.b.c", "a.b", false},
	} {
		if got := timer.Matches(c.filter, c.subject); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.filter, c.subject, got, c.want)
		}
	}
}
