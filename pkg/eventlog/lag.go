package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// ConsumerLag is how far one durable consumer is behind its stream, as the
// server reports it in the consumer's info.
type ConsumerLag struct {
	Stream   string
	Consumer string
	// Pending counts the messages matching the consumer's filter that it
	// has not been delivered yet (NumPending).
	Pending uint64
	// AckPending counts the messages delivered and not yet acknowledged
	// (NumAckPending).
	AckPending int
}

// ConsumerLags returns the lag of every durable consumer on each of
// streams, in the order the server lists them. A stream that does not
// exist has no consumers. Ephemeral consumers, such as the ordered readers
// that projections follow the log with, are left out: their names change on
// every start, and they do not acknowledge, so they have no lag to speak of.
// It is safe for concurrent use.
func ConsumerLags(ctx context.Context, js jetstream.JetStream, streams ...string) ([]ConsumerLag, error) {
	var out []ConsumerLag
	for _, name := range streams {
		stream, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("stream %s: %w", name, err)
		}
		infos := stream.ListConsumers(ctx)
		for info := range infos.Info() {
			if info.Config.Durable == "" {
				continue
			}
			out = append(out, ConsumerLag{Stream: name, Consumer: info.Name, Pending: info.NumPending, AckPending: info.NumAckPending})
		}
		if err := infos.Err(); err != nil {
			return out, fmt.Errorf("list consumers of %s: %w", name, err)
		}
	}
	return out, nil
}

// DefaultLagTimeout bounds how long one scrape waits for consumer infos.
const DefaultLagTimeout = 2 * time.Second

var (
	consumerPendingDesc = prometheus.NewDesc("steward_consumer_pending",
		"Messages matching a durable consumer's filter not yet delivered to it (JetStream NumPending).",
		[]string{"stream", "consumer"}, nil)
	consumerAckPendingDesc = prometheus.NewDesc("steward_consumer_ack_pending",
		"Messages delivered to a durable consumer and not yet acknowledged (JetStream NumAckPending).",
		[]string{"stream", "consumer"}, nil)
)

// lagCollector reports ConsumerLags on every scrape.
type lagCollector struct {
	js      jetstream.JetStream
	timeout time.Duration
	streams []string
}

// NewLagCollector returns a Prometheus collector that asks the server for
// the lag of the durable consumers on streams at every scrape, waiting at
// most timeout (DefaultLagTimeout when not positive). Reading at scrape time
// rather than caching keeps the numbers current and costs nothing between
// scrapes. When the server does not answer in time, the scrape reports an
// error for these metrics and keeps whatever it had already collected.
func NewLagCollector(js jetstream.JetStream, timeout time.Duration, streams ...string) prometheus.Collector {
	if timeout <= 0 {
		timeout = DefaultLagTimeout
	}
	return &lagCollector{js: js, timeout: timeout, streams: streams}
}

// Describe implements prometheus.Collector.
func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- consumerPendingDesc
	ch <- consumerAckPendingDesc
}

// Collect implements prometheus.Collector.
func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	lags, err := ConsumerLags(ctx, c.js, c.streams...)
	for _, l := range lags {
		ch <- prometheus.MustNewConstMetric(consumerPendingDesc, prometheus.GaugeValue, float64(l.Pending), l.Stream, l.Consumer)
		ch <- prometheus.MustNewConstMetric(consumerAckPendingDesc, prometheus.GaugeValue, float64(l.AckPending), l.Stream, l.Consumer)
	}
	if err != nil {
		ch <- prometheus.NewInvalidMetric(consumerPendingDesc, fmt.Errorf("consumer lag: %w", err))
	}
}
