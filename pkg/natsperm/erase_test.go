package natsperm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/timer"
)

// TestAPlaneCannotTouchAnothersTimers: JetStream honours headers that
// NATS permissions do not see, on any message a user may publish to a
// stream. Governance, on subjects it may publish to, tries each: aiming a
// schedule at execution's fired timers, purging the whole stream by a
// roll-up, purging one of execution's schedules by the scheduler's own
// purge header, and taking the message id execution's next timer will
// use. Each plane's timers are in a stream of their own, so all of it
// reaches governance's timers only: execution's fire, and nothing else.
func TestAPlaneCannotTouchAnothersTimers(t *testing.T) {
	s := startServer(t)
	openStores(t, s)
	ctx := context.Background()

	exe := s.connect(t, event.PlaneExecution)
	exeTimers, err := timer.Open(ctx, exe.js, timer.Config{Logger: stewardtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	sub, err := exeTimers.Run(ctx, "execution-timers", []string{"execution.retry"}, func(_ context.Context, f timer.Fired) error {
		got <- f.ID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Stop)
	due := time.Now().Add(3 * time.Second)
	if err := exeTimers.Set(ctx, "execution.retry", "pending", due, nil); err != nil {
		t.Fatal(err)
	}

	gov := s.connect(t, event.PlaneGovernance)
	govTimers, err := timer.Open(ctx, gov.js, timer.Config{Logger: stewardtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := govTimers.Set(ctx, "governance.approval", "own", time.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	exeSubject := func(stage, id string) string { return timer.Subject(timer.DefaultPrefix, stage, "execution.retry", id) }
	own := timer.DefaultPrefix + ".governance.at.governance.forge"

	forged := &nats.Msg{Subject: own, Data: []byte("forged"), Header: nats.Header{}}
	forged.Header.Set(timer.HeaderKind, "execution.retry")
	forged.Header.Set(timer.HeaderID, "forged")
	forged.Header.Set(timer.HeaderAt, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := gov.js.PublishMsg(ctx, forged, jetstream.WithScheduleAt(time.Now()), jetstream.WithScheduleTarget(exeSubject("fired", "forged"))); err == nil {
		t.Error("the server took a schedule of governance's aimed at execution's timers")
	}
	attempts := []nats.Header{
		{"Nats-Rollup": {"all"}},
		{"Nats-Schedule-Next": {"purge"}, "Nats-Scheduler": {exeSubject("at", "pending")}},
		{"Nats-Msg-Id": {"execution.retry/" + lastToken(exeSubject("at", "fresh"))}}, // the id Set gives it
	}
	for _, h := range attempts {
		// Refused or taken, as the server likes: only what it does
		// matters, checked below.
		_, _ = gov.js.PublishMsg(ctx, &nats.Msg{Subject: own, Header: h})
	}

	if err := exeTimers.Set(ctx, "execution.retry", "fresh", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"pending": true, "fresh": true}
	for len(want) > 0 {
		select {
		case id := <-got:
			if !want[id] {
				t.Fatalf("execution handled %q, want only %v", id, want)
			}
			delete(want, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("execution's timers did not fire: %v", want)
		}
	}
}

func lastToken(subject string) string { return subject[strings.LastIndexByte(subject, '.')+1:] }
