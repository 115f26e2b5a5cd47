package eventlog_test

import (
	"context"
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
