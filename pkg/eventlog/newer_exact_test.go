package eventlog_test

import (
	"context"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAMisfiledEventOfAnUnknownTypeIsCorrupt: an event whose type this
// build does not know is a newer build's only where it is stored: sealed
// for task b and stored under task a's subject it is misfiled, as one of a
// known type would be: a read of a's chain is corrupt, not unavailable
// for ever (no build would ever read it).
func TestAMisfiledEventOfAnUnknownTypeIsCorrupt(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	created, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "a"}, &stewardv1.TaskCreated{}))
	if err != nil {
		t.Fatal(err)
	}
	ev := &stewardv1.Event{EventId: event.RandomID(), TaskId: "b", Type: stewardtest.NewerType}
	ev.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 116, protowire.BytesType), nil))
	data, err := event.Seal(ev, created.Event.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.JS.PublishMsg(ctx, &nats.Msg{Subject: l.TaskSubject("a", stewardtest.NewerType), Data: data,
		Header: nats.Header{jetstream.MsgIDHeader: []string{ev.EventId}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadAfter(ctx, "a", 0); errs.CodeOf(err) != errs.Corrupt {
		t.Errorf("read a: %v (%v), want corrupt: the event is stored under a task it was not sealed for", err, errs.CodeOf(err))
	}
}

// TestOnlyANewerTypesFilterIsKept: keepNewer keeps a filter a newer build
// added for one type it does not know, never a wildcard someone put in
// the consumer's filter (by hand, or a hostile user with the plane's
// rights): kept, every build would make the consumer with it again, for
// good, and react to events of every type under it.
func TestOnlyANewerTypesFilterIsKept(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	wild := l.Config().SchedulePrefix + ".*.*"
	cfg := remade(t, l, bus.JS, jetstream.ConsumerConfig{Durable: "wild", FilterSubjects: []string{l.TypeFilter(event.TypeTaskCreated), wild}})
	if slices.Contains(cfg.FilterSubjects, wild) {
		t.Errorf("filters %v: the wildcard %s was kept as a newer build's type", cfg.FilterSubjects, wild)
	}
}

// remade makes the consumer cfg names as another replica would, then
// again as this build does with a reaction to task creations, and returns
// the consumer's config after.
func remade(t *testing.T, l *eventlog.Log, js jetstream.JetStream, cfg jetstream.ConsumerConfig) jetstream.ConsumerConfig {
	t.Helper()
	ctx := context.Background()
	cfg.AckPolicy = jetstream.AckExplicitPolicy
	if _, err := js.CreateOrUpdateConsumer(ctx, eventlog.DefaultStream, cfg); err != nil {
		t.Fatal(err)
	}
	sub, err := l.React(ctx, cfg.Durable, eventlog.OnRecord[*stewardv1.TaskCreated](func(context.Context, *stewardv1.EventRecord) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	cons, err := js.Consumer(ctx, eventlog.DefaultStream, cfg.Durable)
	if err != nil {
		t.Fatal(err)
	}
	return cons.CachedInfo().Config
}
