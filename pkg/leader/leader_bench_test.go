package leader_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/leader"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// BenchmarkLast compares the leader's answer to a last-by-subject get with
// a direct get's on one embedded server holding many tasks: what a head
// read costs when it always asks the leader. Run:
//
//	go test -run '^$' -bench BenchmarkLast -count 5 ./pkg/leader/
func BenchmarkLast(b *testing.B) {
	l, bus := stewardtest.OpenLog(b)
	ctx := context.Background()
	for i := range 2000 {
		ev, err := event.New(event.Meta{TaskID: fmt.Sprint("t", i)}, &stewardv1.TaskCreated{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(ctx, eventlog.Head{}, ev); err != nil {
			b.Fatal(err)
		}
	}
	stream, err := bus.JS.Stream(ctx, eventlog.DefaultStream)
	if err != nil {
		b.Fatal(err)
	}
	subject := l.Subject("t1000")
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := stream.GetLastMsgForSubject(ctx, subject); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("leader", func(b *testing.B) {
		for b.Loop() {
			if _, err := leader.Last(ctx, bus.JS, eventlog.DefaultStream, subject); err != nil {
				b.Fatal(err)
			}
		}
	})
}
