package stewardtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Eventually polls cond until it holds, and fails tb after within, with
// what cond last said about the state it saw. It is the one place tests
// wait: on a condition, never on a fixed sleep.
func Eventually(tb testing.TB, within time.Duration, cond func() (ok bool, state string)) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting after %s: %s", within, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Settle waits until consumer has acknowledged every message on stream
// that its filter takes: the plane behind it has handled every event so
// far, and since a reaction's own appends land before its ack, they are on
// the log too. It reads the ack floor against the last message on the
// filter's subjects, not NumPending, which the server updates a moment
// after an append and so can read 0 for an event just stored.
func (b *Bus) Settle(tb testing.TB, stream, consumer string) {
	tb.Helper()
	b.waitConsumer(tb, stream, consumer, func(ci *jetstream.ConsumerInfo, last uint64) bool {
		return ci.AckFloor.Stream >= last && ci.NumAckPending == 0
	})
}

// Delivered waits until consumer has been delivered every message on
// stream that its filter takes, handled or held: what a test waits on when
// the plane keeps an event unacknowledged on purpose (a refused permit,
// held until it expires, permitsig.go), which Settle would wait out.
func (b *Bus) Delivered(tb testing.TB, stream, consumer string) {
	tb.Helper()
	b.waitConsumer(tb, stream, consumer, func(ci *jetstream.ConsumerInfo, last uint64) bool {
		return ci.Delivered.Stream >= last
	})
}

// waitConsumer waits until done holds of consumer's info and the last
// message on its filter's subjects. It reads that last message rather
// than NumPending, which the server updates a moment after an append and
// so can read 0 for an event just stored.
func (b *Bus) waitConsumer(tb testing.TB, stream, consumer string, done func(*jetstream.ConsumerInfo, uint64) bool) {
	tb.Helper()
	ctx := context.Background()
	Eventually(tb, 30*time.Second, func() (bool, string) {
		cons, err := b.JS.Consumer(ctx, stream, consumer)
		if err != nil {
			tb.Fatal(err)
		}
		s, err := b.JS.Stream(ctx, stream)
		if err != nil {
			tb.Fatal(err)
		}
		ci, err := cons.Info(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		filters := ci.Config.FilterSubjects
		if ci.Config.FilterSubject != "" {
			filters = append(filters, ci.Config.FilterSubject)
		}
		if len(filters) == 0 {
			filters = []string{">"}
		}
		var last uint64
		for _, f := range filters {
			msg, err := s.GetLastMsgForSubject(ctx, f)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				tb.Fatal(err)
			}
			last = max(last, msg.Sequence)
		}
		return done(ci, last), fmt.Sprintf("%s has %d events undelivered, %d unacknowledged", consumer, ci.NumPending, ci.NumAckPending)
	})
}
