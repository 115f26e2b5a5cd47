package eventlog_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestTraceTravelsOnTheEvent: an event appended under a span carries its
// context, a reaction to it runs in a span of the same trace whose own
// appends carry that span on; an event appended outside any span carries
// nothing and its reaction records no span.
func TestTraceTravelsOnTheEvent(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	bus := stewardtest.StartBus(t)
	l, err := eventlog.Open(context.Background(), bus.JS, eventlog.Config{Tracing: tp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reacted := make(chan trace.SpanContext, 2)
	sub, err := l.React(ctx, "reactor", eventlog.On(func(ctx context.Context, rec *stewardv1.EventRecord, _ *stewardv1.TaskStarted) error {
		if _, err := l.Append(ctx, lastHead(t, l, rec.Event.TaskId), mustEvent(t, event.Meta{TaskID: rec.Event.TaskId}, &stewardv1.TaskPaused{})); err != nil {
			return err
		}
		reacted <- trace.SpanContextFromContext(ctx)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()

	if _, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "untraced"}, &stewardv1.TaskStarted{})); err != nil {
		t.Fatal(err)
	}
	if sc := waitReaction(t, reacted); sc.IsValid() {
		t.Fatalf("the reaction to an untraced event ran in trace %s", sc.TraceID())
	}
	for _, rec := range readAll(t, l, "untraced") {
		if rec.Event.TraceParent != "" {
			t.Fatalf("untraced %s carries %q", rec.Event.Type, rec.Event.TraceParent)
		}
	}

	rctx, root := tp.Tracer("test").Start(ctx, "propose")
	if _, err := l.Append(rctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "traced"}, &stewardv1.TaskStarted{})); err != nil {
		t.Fatal(err)
	}
	root.End()
	sc := waitReaction(t, reacted)
	if sc.TraceID() != root.SpanContext().TraceID() {
		t.Fatalf("the reaction ran in trace %s; want %s", sc.TraceID(), root.SpanContext().TraceID())
	}
	recs := readAll(t, l, "traced")
	want := []string{root.SpanContext().SpanID().String(), sc.SpanID().String()} // who wrote each: the root, then the reaction
	for i, rec := range recs {
		if f := strings.Split(rec.Event.TraceParent, "-"); len(f) != 4 || f[1] != sc.TraceID().String() || f[2] != want[i] {
			t.Errorf("%s carries %q; want trace %s, parent %s", rec.Event.Type, rec.Event.TraceParent, sc.TraceID(), want[i])
		}
	}
	// The reaction's span ends after its handler returns, so it is
	// recorded a moment after the handler said it reacted.
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		named := spanNames(spans)
		return len(named) >= 2, fmt.Sprintf("spans recorded: %v", named)
	})
	for _, s := range spans.GetSpans() {
		if s.Name == "reactor task.started" && s.Parent.SpanID() != root.SpanContext().SpanID() {
			t.Errorf("the reaction's span has parent %s; want the root %s", s.Parent.SpanID(), root.SpanContext().SpanID())
		}
	}
	if named := spanNames(spans); strings.Join(named, ",") != "propose,reactor task.started" {
		t.Errorf("spans recorded: %v; want the root and one reaction (none for the untraced event)", named)
	}
}

func spanNames(spans *tracetest.InMemoryExporter) []string {
	var named []string
	for _, s := range spans.GetSpans() {
		named = append(named, s.Name)
	}
	slices.Sort(named)
	return named
}

func waitReaction(t *testing.T, reacted <-chan trace.SpanContext) trace.SpanContext {
	t.Helper()
	select {
	case sc := <-reacted:
		return sc
	case <-time.After(10 * time.Second):
		t.Fatal("no reaction")
		return trace.SpanContext{}
	}
}

func readAll(t *testing.T, l *eventlog.Log, taskID string) []*stewardv1.EventRecord {
	t.Helper()
	recs, err := l.Read(context.Background(), taskID)
	if err != nil || len(recs) != 2 {
		t.Fatalf("read %s: %d events, %v; want 2", taskID, len(recs), err)
	}
	return recs
}

// TestFitsCountsTheTraceContext: an event that fits only without the
// trace context Append would write onto it is refused by Fits too, so a
// command that asked Fits first is not refused by Append after acting.
func TestFitsCountsTheTraceContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	bus := stewardtest.StartBus(t)
	l, err := eventlog.Open(context.Background(), bus.JS, eventlog.Config{Tracing: tp})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("test").Start(context.Background(), "propose")
	defer span.End()
	limit := int(bus.JS.Conn().MaxPayload())
	ev := mustEvent(t, event.Meta{TaskID: "near-limit"}, &stewardv1.TaskPaused{})
	bare, err := event.Seal(proto.CloneOf(ev), make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	ev.GetTaskPaused().Reason = strings.Repeat("r", limit-len(bare)-20) // fits by a few bytes untraced
	if err := l.Fits(context.Background(), ev); err != nil {
		t.Fatalf("untraced, the event should fit: %v", err)
	}
	_, appendErr := l.Append(ctx, eventlog.Head{}, proto.CloneOf(ev))
	if !errs.Is(appendErr, errs.TooLarge) {
		t.Fatalf("append under a span: %v; want TooLarge (the trace context does not fit)", appendErr)
	}
	if err := l.Fits(ctx, ev); !errs.Is(err, errs.TooLarge) {
		t.Errorf("Fits under the span that Append refuses: %v; want TooLarge", err)
	}
}
