package event_test

import (
	"bytes"
	"crypto/sha256"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// FuzzOpen feeds Open the bytes a log or an export file could hold. What
// opens is exactly what Seal makes of the event it decodes to: sealing it
// again opens to the same event. And whatever decodes as an event at all
// is sealed and opened back unchanged, while the same sealed bytes with
// any one bit flipped never open: the hash covers every byte.
func FuzzOpen(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var prev []byte
	for _, p := range []event.Payload{
		&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "tidy", AllowedTools: []string{"w@1"}}, RequestId: "r1"},
		&stewardv1.TaskStarted{},
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "act-1", Tool: "w", Request: []byte(`{"params":{}}`)}},
		&stewardv1.ToolRegistered{Contract: &stewardv1.ToolContract{Name: "w", Version: "1"}},
	} {
		ev, err := event.New(event.Meta{ID: "e", TaskID: "t1", Time: at, Actor: &stewardv1.Actor{Principal: "alice"}}, p)
		if err != nil {
			f.Fatal(err)
		}
		data, err := event.Seal(ev, prev)
		if err != nil {
			f.Fatal(err)
		}
		prev = ev.Hash
		f.Add(data)
		f.Add(data[:len(data)-1])
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if ev, err := event.Open(data); err == nil {
			again := proto.CloneOf(ev)
			resealed, err := event.Seal(again, ev.PrevHash)
			if err != nil {
				t.Fatalf("opened, but does not seal again: %v", err)
			}
			if reopened, err := event.Open(resealed); err != nil || !proto.Equal(reopened, ev) {
				t.Fatalf("opened, sealed again, and opened to %v (%v), not %v", reopened, err, ev)
			}
		}
		var ev stewardv1.Event
		if proto.Unmarshal(data, &ev) != nil {
			return
		}
		ev.Type = event.TypeOf(&ev)
		sealed, err := event.Seal(&ev, ev.PrevHash)
		if err != nil {
			t.Fatalf("a decoded event does not seal: %v", err)
		}
		opened, err := event.Open(sealed)
		if ev.Type == "" {
			if err == nil {
				t.Fatal("an event without a payload opened")
			}
			return
		}
		if err != nil || !proto.Equal(opened, &ev) {
			t.Fatalf("sealed %v, opened %v (%v)", &ev, opened, err)
		}
		if again, err := event.Seal(opened, opened.PrevHash); err != nil || !bytes.Equal(again, sealed) {
			t.Fatalf("sealing is not deterministic: %x then %x (%v)", sealed, again, err)
		}
		sum := sha256.Sum256(data)
		for i := range 3 {
			flipped := bytes.Clone(sealed)
			pos := int(sum[2*i])<<8 | int(sum[2*i+1])
			flipped[pos%len(flipped)] ^= 1 << (sum[10+i] % 8)
			if ev, err := event.Open(flipped); err == nil {
				t.Fatalf("bit %d of byte %d flipped, and %x still opened as %v", sum[10+i]%8, pos%len(flipped), flipped, ev)
			}
		}
	})
}
