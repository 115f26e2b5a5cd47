package event_test

import (
	"bytes"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestLinksReadsWhatSealWrote: the hash and prev_hash Links reads from
// stored bytes are those Seal set, for a first event and a later one, and
// nothing from bytes that hold neither.
func TestLinksReadsWhatSealWrote(t *testing.T) {
	first, err := event.New(event.Meta{TaskID: "t1"}, &stewardv1.TaskCreated{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := event.Seal(first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hash, prev := event.Links(data); !bytes.Equal(hash, first.Hash) || prev != nil {
		t.Errorf("first event: Links = %x, %x; want %x, none", hash, prev, first.Hash)
	}
	next, err := event.New(event.Meta{TaskID: "t1"}, &stewardv1.BudgetReleased{Tokens: 7})
	if err != nil {
		t.Fatal(err)
	}
	if data, err = event.Seal(next, first.Hash); err != nil {
		t.Fatal(err)
	}
	if hash, prev := event.Links(data); !bytes.Equal(hash, next.Hash) || !bytes.Equal(prev, first.Hash) {
		t.Errorf("second event: Links = %x, %x; want %x, %x", hash, prev, next.Hash, first.Hash)
	}
	for _, junk := range [][]byte{nil, {0xff}, bytes.Repeat([]byte{0x4a}, 40)} {
		if hash, prev := event.Links(junk); hash != nil || prev != nil {
			t.Errorf("Links(%x) = %x, %x; want none", junk, hash, prev)
		}
	}
}
