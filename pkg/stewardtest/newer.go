package stewardtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// NewerType is the type of the event AppendNewer appends: one no build
// knows, as a newer build's new type is to an older plane.
const NewerType = "task.from_a_newer_build"

// newerPayloadField is the Event payload number held for it (issue 36,
// part 4): no build defines it.
const newerPayloadField = 116

// AppendNewer appends to after's task, right after it, an event of
// NewerType as a newer build would write it: its payload under a field
// number this build does not know, chained and hashed like any other. It
// returns the task's head: the newer event.
func AppendNewer(tb testing.TB, l *eventlog.Log, js jetstream.JetStream, after *stewardv1.EventRecord) eventlog.Head {
	tb.Helper()
	ev := &stewardv1.Event{EventId: event.RandomID(), TaskId: after.Event.TaskId, Type: NewerType, Time: timestamppb.Now(), Actor: after.Event.Actor}
	payload := protowire.AppendTag(nil, 1, protowire.BytesType)
	payload = protowire.AppendString(payload, "what a newer build says")
	unknown := protowire.AppendTag(nil, newerPayloadField, protowire.BytesType)
	ev.ProtoReflect().SetUnknown(protowire.AppendBytes(unknown, payload))
	data, err := event.Seal(ev, after.Event.Hash)
	if err != nil {
		tb.Fatal(err)
	}
	ack, err := js.PublishMsg(context.Background(), &nats.Msg{
		Subject: l.TaskSubject(ev.TaskId, NewerType), Data: data,
		Header: nats.Header{jetstream.MsgIDHeader: []string{ev.EventId}, eventlog.HeaderType: []string{NewerType}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return eventlog.Head{Sequence: ack.Sequence, Hash: ev.Hash}
}

// AppendAfter appends to taskID, after head, an event of payload by the
// plane that owns it: a newer plane's next event, which an older plane
// reacts to though it cannot fold the task.
func AppendAfter(tb testing.TB, l *eventlog.Log, head eventlog.Head, taskID string, payload event.Payload) *stewardv1.EventRecord {
	tb.Helper()
	ev, err := event.New(event.Meta{TaskID: taskID}, payload)
	if err != nil {
		tb.Fatal(err)
	}
	ev.Actor = &stewardv1.Actor{Plane: event.Owner(ev.Type)}
	rec, err := l.Append(context.Background(), head, ev)
	if err != nil {
		tb.Fatal(err)
	}
	return rec
}

// LeftForNewer waits until the reaction consumer has had the event at seq
// delivered again and again and acknowledged none from it on, and checks
// that l set nothing aside: what an older plane does with a task that holds
// a newer build's event.
func LeftForNewer(tb testing.TB, l *eventlog.Log, js jetstream.JetStream, consumer string, seq uint64) {
	tb.Helper()
	ctx := context.Background()
	Eventually(tb, 20*time.Second, func() (bool, string) {
		cons, err := js.Consumer(ctx, l.Config().Stream, consumer)
		if err != nil {
			return false, err.Error()
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		return info.NumRedelivered > 0 && info.AckFloor.Stream < seq,
			fmt.Sprintf("consumer %s: redelivered %d, ack floor %d, want below %d", consumer, info.NumRedelivered, info.AckFloor.Stream, seq)
	})
	dead, err := l.DeadLetters(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if len(dead) > 0 {
		tb.Fatalf("set aside %+v: a newer build's event, or one on its task, is no bad event", dead)
	}
}
