package eventlog_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"slices"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAReadOfWhatIsNewFollowsThePredecessorTheDecoderReads: an event whose
// bytes carry prev_hash twice, a decoy naming an earlier event before the
// real one, decodes (and verifies, and is stored on the chain's condition)
// as linked to the real one, the last a decoder keeps. A read of what is
// new stops its walk back at that one, as a fold links it, and returns the
// chain whole, as Read does. (From the review of the chain-following
// reads: read from the first field, the walk stopped at the decoy, and
// every fold of the task refused it.)
func TestAReadOfWhatIsNewFollowsThePredecessorTheDecoderReads(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	recs := appendTask(t, l, "twice", 8)
	x, y := recs[7], recs[2]
	ev := mustEvent(t, event.Meta{TaskID: "twice"}, &stewardv1.BudgetReleased{Tokens: 99})
	data := sealTwice(t, ev, x.Event.Hash, y.Event.Hash)
	if _, err := bus.JS.PublishMsg(ctx, &nats.Msg{
		Subject: l.TaskSubject("twice", ev.Type), Data: data,
		Header: nats.Header{
			jetstream.MsgIDHeader:                   []string{ev.EventId},
			jetstream.ExpectedLastSubjSeqHeader:     []string{strconv.FormatUint(x.Sequence, 10)},
			jetstream.ExpectedLastSubjSeqSubjHeader: []string{l.Subject("twice")},
			eventlog.HeaderType:                     []string{ev.Type},
		},
	}); err != nil {
		t.Fatal(err)
	}
	all, err := l.Read(ctx, "twice")
	if err != nil {
		t.Fatalf("Read refuses the chain: %v", err)
	}
	got, err := l.ReadAfter(ctx, "twice", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sequences(got), sequences(all)) {
		t.Errorf("ReadAfter(0) = %v; Read = %v", sequences(got), sequences(all))
	}
	var head []byte
	for _, r := range got {
		if !bytes.Equal(r.Event.PrevHash, head) {
			t.Fatalf("event %d of ReadAfter does not link to the one before it: a fold refuses it", r.Sequence)
		}
		head = r.Event.Hash
	}
}

// sealTwice seals ev onto prev as Seal does, with a second prev_hash
// field, decoy, written before the real one: protobuf keeps the last
// occurrence of a field, so the event decodes and verifies as linked to
// prev.
func sealTwice(t *testing.T, ev *stewardv1.Event, prev, decoy []byte) []byte {
	t.Helper()
	ev.PrevHash, ev.Hash = prev, nil
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	body = append(protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), decoy), body...)
	sum := sha256.Sum256(body)
	ev.Hash = sum[:]
	return protowire.AppendBytes(protowire.AppendTag(body, 99, protowire.BytesType), sum[:])
}
