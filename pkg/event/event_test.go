package event_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

func newEvent(t *testing.T, taskID string, p event.Payload) *stewardv1.Event {
	t.Helper()
	ev, err := event.New(event.Meta{TaskID: taskID}, p)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestSealIsReproducible(t *testing.T) {
	ev := newEvent(t, "t1", &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	data, err := event.Seal(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Sealing is reproducible: the same event sealed again gives the same
	// bytes, so anyone holding the event can recompute what was stored.
	again, err := event.Seal(proto.Clone(ev).(*stewardv1.Event), ev.PrevHash)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(again) {
		t.Fatalf("sealing twice gave different bytes")
	}
	got, err := event.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, ev) {
		t.Fatalf("open(seal(ev)) = %v, want %v", got, ev)
	}
}

func TestOpenDetectsEveryFlippedByte(t *testing.T) {
	ev := newEvent(t, "t1", &stewardv1.TaskPaused{Reason: "lunch"})
	data, err := event.Seal(ev, make([]byte, event.HashSize))
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x01
		if _, err := event.Open(bad); err == nil {
			t.Errorf("flipping byte %d went unnoticed", i)
		}
	}
}

func TestChainNamesTheFirstBrokenEvent(t *testing.T) {
	var stored [][]byte
	var prev []byte
	for _, p := range []event.Payload{&stewardv1.TaskCreated{}, &stewardv1.TaskStarted{}, &stewardv1.TaskPaused{}, &stewardv1.TaskResumed{}} {
		ev := newEvent(t, "t1", p)
		data, err := event.Seal(ev, prev)
		if err != nil {
			t.Fatal(err)
		}
		prev = ev.Hash
		stored = append(stored, data)
	}
	// Drop event 2: event 3 no longer links.
	tampered := [][]byte{stored[0], stored[1], stored[3]}
	var c event.Chain
	var brk *event.BreakError
	for _, d := range tampered {
		if _, err := c.Next(d); err != nil {
			if !errors.As(err, &brk) {
				t.Fatalf("error %v is not a BreakError", err)
			}
			break
		}
	}
	if brk == nil || brk.Index != 2 {
		t.Fatalf("break = %v, want one at index 2", brk)
	}
}

func TestIDIsDeterministic(t *testing.T) {
	if event.ID("a", "b") != event.ID("a", "b") || event.ID("a", "b") == event.ID("ab") {
		t.Fatal("ID must be a function of its parts, with boundaries")
	}
}

func TestNewRejectsNonEvents(t *testing.T) {
	if _, err := event.New(event.Meta{}, &stewardv1.Task{}); err == nil {
		t.Fatal("a Task is not an event payload")
	}
}

func TestOpenRefusesATypeThatDoesNotMatchThePayload(t *testing.T) {
	ev := newEvent(t, "t1", &stewardv1.TaskCancelled{})
	ev.Type = event.TypeTaskStarted // hashed, but a lie about the payload
	data, err := event.Seal(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := event.Open(data); err == nil {
		t.Fatal("an event whose type names another payload was accepted")
	}
}

func TestChainRefusesAForeignFirstEvent(t *testing.T) {
	ev := newEvent(t, "victim", &stewardv1.TaskCreated{})
	data, err := event.Seal(ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := event.Chain{TaskID: "attacker"}
	if _, err := c.Next(data); err == nil {
		t.Fatal("another task's chain verified under this task's name")
	}
}
