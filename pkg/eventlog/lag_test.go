package eventlog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestConsumerLags appends three events, delivers one to a durable
// consumer without acknowledging it, and checks what the lag says; an
// ordered (ephemeral) reader and a missing stream add nothing.
func TestConsumerLags(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	stream := l.Config().Stream
	cons, err := bus.JS.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: "lagger", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: l.Config().SubjectPrefix + ".>",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.JS.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{}); err != nil {
		t.Fatal(err)
	}
	head := eventlog.Head{}
	payloads := []event.Payload{&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}}, &stewardv1.TaskStarted{}, &stewardv1.TaskPaused{}}
	for _, p := range payloads {
		rec, err := l.Append(ctx, head, mustEvent(t, event.Meta{TaskID: "lag"}, p))
		if err != nil {
			t.Fatal(err)
		}
		head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range batch.Messages() {
		// Delivered, deliberately not acknowledged.
	}

	// The server counts a consumer's pending messages as it gets to it:
	// right after a fetch it may still say none (CI saw Pending 0 once).
	want := []eventlog.ConsumerLag{{Stream: stream, Consumer: "lagger", Pending: 2, AckPending: 1}}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		lags, err := eventlog.ConsumerLags(ctx, bus.JS, stream, "NO_SUCH_STREAM")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(lags) == fmt.Sprint(want), fmt.Sprintf("lags = %+v, want %+v", lags, want)
	})

	c := eventlog.NewLagCollector(bus.JS, time.Second, stream)
	expected := fmt.Sprintf(`
# HELP steward_consumer_ack_pending Messages delivered to a durable consumer and not yet acknowledged (JetStream NumAckPending).
# TYPE steward_consumer_ack_pending gauge
steward_consumer_ack_pending{consumer="lagger",stream=%[1]q} 1
# HELP steward_consumer_pending Messages matching a durable consumer's filter not yet delivered to it (JetStream NumPending).
# TYPE steward_consumer_pending gauge
steward_consumer_pending{consumer="lagger",stream=%[1]q} 2
`, stream)
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected)); err != nil {
		t.Fatal(err)
	}
}
