package eventlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// BenchmarkReactionHop measures one hop of the plane pipeline: an event is
// appended, a durable consumer receives it and its reaction appends the
// next event — the step every plane repeats for a governed action.
func BenchmarkReactionHop(b *testing.B) {
	l, _ := stewardtest.OpenLog(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan *stewardv1.EventRecord, 1)
	sub, err := l.React(ctx, "hop", eventlog.OnRecord[*stewardv1.TaskPaused](func(_ context.Context, rec *stewardv1.EventRecord) error {
		got <- rec
		return nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Stop()
	head := eventlog.Head{}
	i := 0
	var total time.Duration
	for b.Loop() {
		i++
		ev, _ := event.New(event.Meta{TaskID: "hop", ID: fmt.Sprint("hop", i)}, &stewardv1.TaskPaused{})
		start := time.Now()
		rec, err := l.Append(ctx, head, ev)
		if err != nil {
			b.Fatal(err)
		}
		<-got
		total += time.Since(start)
		head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(i), "µs/hop")
}
