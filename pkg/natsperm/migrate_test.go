package natsperm_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/timer"
)

// TestAPlaneMovesItsTimersAsItsOwnUser: the shared timer stream of an
// earlier version (made by the admin, as the earlier version's setup did),
// holding a pending governance timer and one that fired unacknowledged.
// Governance, over its own NATS user and nothing more, opens its timers:
// the move needs only the read-only grants on the shared stream.
func TestAPlaneMovesItsTimersAsItsOwnUser(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	admin := s.connect(t, embedded.AdminUser)
	if _, err := admin.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: timer.DefaultStream, Subjects: []string{timer.DefaultPrefix + ".at.>", timer.DefaultPrefix + ".fired.>"},
		AllowMsgSchedules: true, AllowMsgTTL: true, AllowRollup: true,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.js.CreateConsumer(ctx, timer.DefaultStream, jetstream.ConsumerConfig{
		Durable: "governance-timers", FilterSubjects: []string{timer.DefaultPrefix + ".fired.governance.approval.*"}, AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	setShared := func(id string, at time.Time) {
		t.Helper()
		kind, token := "governance.approval", idToken(id)
		msg := &nats.Msg{Subject: timer.DefaultPrefix + ".at." + kind + "." + token, Header: nats.Header{}}
		msg.Header.Set(timer.HeaderKind, kind)
		msg.Header.Set(timer.HeaderID, id)
		msg.Header.Set(timer.HeaderAt, at.UTC().Format(time.RFC3339Nano))
		if _, err := admin.js.PublishMsg(ctx, msg, jetstream.WithScheduleAt(at.Truncate(time.Second).Add(time.Second)),
			jetstream.WithScheduleTarget(timer.DefaultPrefix+".fired."+kind+"."+token), jetstream.WithScheduleTTL(timer.FiredRetention)); err != nil {
			t.Fatal(err)
		}
	}
	setShared("fired", time.Now())
	shared, err := admin.js.Stream(ctx, timer.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		_, err := shared.GetLastMsgForSubject(ctx, timer.DefaultPrefix+".fired.governance.approval."+idToken("fired"))
		return err == nil, "the shared stream's timer has not fired"
	})
	setShared("pending", time.Now().Add(2*time.Second))

	gov := s.connect(t, event.PlaneGovernance)
	tm, err := timer.Open(ctx, gov.js, timer.Config{Logger: stewardtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	sub, err := tm.Run(ctx, "governance-timers", []string{"governance.approval"}, func(_ context.Context, f timer.Fired) error {
		got <- f.ID
		return nil
	})
	if err != nil {
		t.Fatalf("governance opens its timers over its own user: %v (refused: %v)", err, gov.refused)
	}
	t.Cleanup(sub.Stop)
	want := map[string]bool{"fired": true, "pending": true}
	for len(want) > 0 {
		select {
		case id := <-got:
			delete(want, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("not moved: %v (refused: %v)", want, gov.refused)
		}
	}
}

func idToken(id string) string {
	return lastToken(timer.Subject(timer.DefaultPrefix, "at", "governance.approval", id))
}
