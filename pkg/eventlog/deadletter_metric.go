package eventlog

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// UnnamedConsumer is the consumer label of the records written before
// records named their consumer.
const UnnamedConsumer = "unknown"

var deadLettersDesc = prometheus.NewDesc("steward_dead_letters",
	"Events set aside on the dead-letter stream and not replayed, by the consumer that set them aside (reader: the log's readers; unknown: records that predate the consumer's name).",
	[]string{"consumer"}, nil)

// deadLetterCollector reports DeadLetterCounts on every scrape.
type deadLetterCollector struct {
	log     *Log
	timeout time.Duration
}

// NewDeadLetterCollector returns a Prometheus collector of
// steward_dead_letters, read from the dead-letter stream's subjects at
// every scrape (one stream info request, no message), waiting at most
// timeout (DefaultLagTimeout when not positive), as NewLagCollector does.
func NewDeadLetterCollector(log *Log, timeout time.Duration) prometheus.Collector {
	if timeout <= 0 {
		timeout = DefaultLagTimeout
	}
	return &deadLetterCollector{log: log, timeout: timeout}
}

// Describe implements prometheus.Collector.
func (c *deadLetterCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deadLettersDesc }

// Collect implements prometheus.Collector.
func (c *deadLetterCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	counts, err := c.log.DeadLetterCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(deadLettersDesc, fmt.Errorf("dead letters: %w", err))
		return
	}
	for consumer, n := range counts {
		if unnamedConsumer(consumer) {
			consumer = UnnamedConsumer
		}
		ch <- prometheus.MustNewConstMetric(deadLettersDesc, prometheus.GaugeValue, float64(n), consumer)
	}
}
