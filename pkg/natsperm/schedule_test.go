package natsperm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/timer"
)

// TestAScheduleCannotFireAnotherPlanesTimer: a plane may publish
// schedules only under its own timer kinds, but a schedule's target
// (Nats-Schedule-Target) is a header, which permissions do not see, and
// the server takes any subject of the stream. Governance's user aims a
// schedule at execution's fired timers, with execution's headers; the
// server fires it, and execution must not take it for its own.
func TestAScheduleCannotFireAnotherPlanesTimer(t *testing.T) {
	s := startServer(t)
	_, admin := openStores(t, s)
	ctx := context.Background()

	exe := s.connect(t, event.PlaneExecution)
	tm, err := timer.Open(ctx, exe.js, timer.Config{Logger: stewardtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	sub, err := tm.Run(ctx, "execution-timers", []string{"execution.retry"}, func(_ context.Context, f timer.Fired) error {
		got <- f.ID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Stop)

	gov := s.connect(t, event.PlaneGovernance)
	fired := timer.DefaultPrefix + ".fired.execution.retry.forged"
	msg := &nats.Msg{Subject: timer.DefaultPrefix + ".at.governance.forge", Data: []byte("forged"), Header: nats.Header{}}
	msg.Header.Set(timer.HeaderKind, "execution.retry")
	msg.Header.Set(timer.HeaderID, "forged")
	msg.Header.Set(timer.HeaderAt, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := gov.js.PublishMsg(ctx, msg, jetstream.WithScheduleAt(time.Now()), jetstream.WithScheduleTarget(fired)); err != nil {
		t.Fatalf("governance's schedule on its own subject: %v", err)
	}
	stream, err := admin.js.Stream(ctx, timer.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		_, err := stream.GetLastMsgForSubject(ctx, fired)
		return err == nil, fmt.Sprintf("the server has not fired the forged schedule: %v", err)
	})

	// A timer execution set itself, fired after the forged one: the
	// consumer takes them in order, so once it has this one it has seen
	// the forged one too.
	if err := tm.Set(ctx, "execution.retry", "real", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case id := <-got:
			if id == "real" {
				return
			}
			t.Fatalf("execution handled a timer governance scheduled: %q", id)
		case <-time.After(10 * time.Second):
			t.Fatal("execution's own timer did not fire")
		}
	}
}
