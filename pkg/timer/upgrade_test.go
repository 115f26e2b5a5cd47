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

// TestATimerTheEarlierVersionSetsDuringARollingUpgradeFires: a rolling
// upgrade (the Deployments in deploy/k8s update this way) starts the new
// process before it stops the old one. The new one opens its timers and
// moves what the shared stream holds; the old one, still running, then
// sets a timer there, and stops. The timer must still fire for the new
// process, without waiting for it to restart.
func TestATimerTheEarlierVersionSetsDuringARollingUpgradeFires(t *testing.T) {
	t.Parallel()
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	if _, err := bus.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: timer.DefaultStream, Subjects: []string{timer.DefaultPrefix + ".at.>", timer.DefaultPrefix + ".fired.>"},
		AllowMsgSchedules: true, AllowMsgTTL: true, AllowRollup: true,
	}); err != nil {
		t.Fatal(err)
	}

	// The new version starts first.
	tm, err := timer.Open(ctx, bus.JS, timer.WithSweepEvery(timer.Config{Logger: stewardtest.Logger(t)}, 500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan timer.Fired, 10)
	sub, err := tm.Run(ctx, "worker", []string{"k"}, func(_ context.Context, f timer.Fired) error {
		got <- f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Stop)

	// The earlier version, still running, sets a timer as it always did,
	// then stops: nobody reads the shared stream any more.
	kind, id, at := "k", "set-by-the-old-process", time.Now().Add(2*time.Second)
	token := timer.IDToken(id)
	msg := &nats.Msg{Subject: timer.DefaultPrefix + ".at." + kind + "." + token, Header: nats.Header{}}
	msg.Header.Set(timer.HeaderKind, kind)
	msg.Header.Set(timer.HeaderID, id)
	msg.Header.Set(timer.HeaderAt, at.UTC().Format(time.RFC3339Nano))
	if _, err := bus.JS.PublishMsg(ctx, msg, jetstream.WithScheduleAt(at.Truncate(time.Second).Add(time.Second)),
		jetstream.WithScheduleTarget(timer.DefaultPrefix+".fired."+kind+"."+token), jetstream.WithScheduleTTL(timer.FiredRetention)); err != nil {
		t.Fatal(err)
	}

	select {
	case f := <-got:
		if f.ID != id {
			t.Fatalf("fired %s, want %s", f.ID, id)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the timer the earlier version set after the new one started never fired (it waits in the shared stream until the new process restarts)")
	}
}
