package state

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	snapshotAgeDesc = prometheus.NewDesc("steward_views_snapshot_age_seconds",
		"Age of the newest snapshot of the task views this state plane wrote or started from.", nil, nil)
	snapshotBytesDesc = prometheus.NewDesc("steward_views_snapshot_bytes",
		"Size of the last snapshot of the task views this state plane wrote.", nil, nil)
	snapshotWriteDesc = prometheus.NewDesc("steward_views_snapshot_write_seconds",
		"How long the last snapshot of the task views this state plane wrote took to write.", nil, nil)
	snapshotLoadDesc = prometheus.NewDesc("steward_views_snapshot_load_seconds",
		"How long this state plane took at start to read, check and load its snapshot (0 when it folded the log from the start).", nil, nil)
)

// snapshotCollector reports the snapshot metrics of a plane; none until
// it has written or loaded a snapshot.
type snapshotCollector struct{ p *Plane }

func (c snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{snapshotAgeDesc, snapshotBytesDesc, snapshotWriteDesc, snapshotLoadDesc} {
		ch <- d
	}
}

func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	s := &c.p.snap
	at := s.writtenAt.Load()
	if at == 0 {
		return
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(snapshotAgeDesc, c.p.cfg.Now().Sub(time.Unix(0, at)).Seconds())
	gauge(snapshotBytesDesc, float64(s.size.Load()))
	gauge(snapshotWriteDesc, time.Duration(s.writeNanos.Load()).Seconds())
	gauge(snapshotLoadDesc, time.Duration(s.loadNanos.Load()).Seconds())
}

// collectors is the plane's collectors as one.
type collectors []prometheus.Collector

func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}
