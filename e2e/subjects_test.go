package e2e_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestALiveServerKeepsEachTypeOnItsSubjectAndOneChainAcrossThem: a task's
// events in a live `steward dev` are stored each under
// steward.task.<id>.<type>, and an append conditional on the task's last
// sequence across those subjects is refused when an event of another type
// was appended since — JetStream checks it, whoever writes.
func TestALiveServerKeepsEachTypeOnItsSubjectAndOneChainAcrossThem(t *testing.T) {
	h := startSteward(t, setup{nats: true})
	ctx := context.Background()
	id := h.create(t, "subjects-1", contract())
	waitStarted(t, h.agent.clients, id)
	if _, err := h.agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: id, Reason: "a look at the log", RequestId: "subjects-pause"})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h.agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_PAUSED)
	js, stream := h.events(t)
	all := "steward.task." + id + ".>"
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{all}})
	if err != nil {
		t.Fatal(err)
	}
	last, err := stream.GetLastMsgForSubject(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var created uint64
	for {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("after %v: %v", types, err)
		}
		var ev stewardv1.Event
		if err := proto.Unmarshal(msg.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		if want := "steward.task." + id + "." + ev.Type; msg.Subject() != want {
			t.Errorf("a %s event is stored under %s, want %s", ev.Type, msg.Subject(), want)
		}
		meta, err := msg.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == event.TypeTaskCreated {
			created = meta.Sequence.Stream
		}
		types = append(types, ev.Type)
		if meta.Sequence.Stream == last.Sequence {
			break
		}
	}
	for _, want := range []string{event.TypeTaskCreated, event.TypeTaskStarted, event.TypeTaskPaused} {
		if !slices.Contains(types, want) {
			t.Fatalf("the task's events are %v, with no %s", types, want)
		}
	}

	// A writer that read the task just after its creation appends on a
	// subject no event has used yet: the check spans every type subject.
	stale := nats.NewMsg("steward.task." + id + "." + event.TypeTaskResumed)
	stale.Data = []byte("never stored")
	stale.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(created, 10))
	stale.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", all)
	_, err = js.PublishMsg(ctx, stale)
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("a stale conditional append: %v, want wrong last sequence (%d)", err, jetstream.JSErrCodeStreamWrongLastSequence)
	}
	if now, err := stream.GetLastMsgForSubject(ctx, all); err != nil || now.Sequence != last.Sequence {
		t.Fatalf("after the refused append the task's last event is %v (%v), want %d", now, err, last.Sequence)
	}
}
