package eventlog_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// BenchmarkAppend compares Append (seal, then a conditional, deduplicated
// publish) with a raw JetStream publish of the same bytes on one embedded
// server, and with a publish of those bytes carrying the same two headers
// Append sets for JetStream (message id and expected last subject
// sequence) but no sealing: that one shows how much of the gap is the
// server's own work. The three alternate within each iteration, so all see
// the same stream size and the same machine noise; it reports each one's
// median and the ratios to raw. Run:
//
//	go test -run '^$' -bench BenchmarkAppend -count 5 ./pkg/eventlog/
func BenchmarkAppend(b *testing.B) {
	l, bus := stewardtest.OpenLog(b)
	ctx := context.Background()
	payload := &stewardv1.TaskPaused{Reason: "a reason of typical length for a human-written note"}

	raw := mustEvent(b, event.Meta{TaskID: "raw"}, payload)
	rawData, err := event.Seal(raw, make([]byte, event.HashSize))
	if err != nil {
		b.Fatal(err)
	}
	rawSubject := l.TaskSubject("raw", raw.Type)
	// A task of its own per run, so -count runs do not meet each other's
	// message ids in the duplicate window.
	taskID := event.RandomID()
	head := eventlog.Head{}
	hdrSubject := l.TaskSubject("headers-"+taskID, raw.Type)
	hdrChain := l.Subject("headers-" + taskID)
	var hdrLast uint64
	var rawLat, hdrLat, appLat []time.Duration
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		if _, err := bus.JS.Publish(ctx, rawSubject, rawData); err != nil {
			b.Fatal(err)
		}
		rawLat = append(rawLat, time.Since(start))

		start = time.Now()
		ack, err := bus.JS.PublishMsg(ctx, &nats.Msg{Subject: hdrSubject, Data: rawData, Header: nats.Header{
			jetstream.MsgIDHeader:                   []string{fmt.Sprint("h", taskID, i)},
			jetstream.ExpectedLastSubjSeqHeader:     []string{strconv.FormatUint(hdrLast, 10)},
			jetstream.ExpectedLastSubjSeqSubjHeader: []string{hdrChain},
		}})
		if err != nil {
			b.Fatal(err)
		}
		hdrLat = append(hdrLat, time.Since(start))
		hdrLast = ack.Sequence

		ev, err := event.New(event.Meta{TaskID: taskID, ID: fmt.Sprint(taskID, i)}, payload)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		rec, err := l.Append(ctx, head, ev)
		if err != nil {
			b.Fatal(err)
		}
		appLat = append(appLat, time.Since(start))
		head = eventlog.HeadOf(&stewardv1.Task{LastSequence: rec.Sequence, LastHash: rec.Event.Hash})
	}
	rawP50, hdrP50, appP50 := p50(rawLat), p50(hdrLat), p50(appLat)
	b.ReportMetric(micros(rawP50), "raw-p50-µs")
	b.ReportMetric(micros(hdrP50), "headers-p50-µs")
	b.ReportMetric(micros(appP50), "append-p50-µs")
	b.ReportMetric(float64(hdrP50)/float64(rawP50), "headers/raw")
	b.ReportMetric(float64(appP50)/float64(rawP50), "append/raw")
}

func p50(lat []time.Duration) time.Duration {
	slices.Sort(lat)
	return lat[len(lat)/2]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
