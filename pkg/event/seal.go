package event

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// hashField is the field number of Event.hash.
const hashField = 99

// HashSize is the length of an event hash in bytes.
const HashSize = sha256.Size

// trailerSize is the encoded size of the hash field: a two-byte tag, a
// one-byte length and the hash.
const trailerSize = 2 + 1 + HashSize

// canonical marshals deterministically, reusing the sizes that Size has
// just cached so that Seal can allocate the stored bytes once.
var canonical = proto.MarshalOptions{Deterministic: true, UseCachedSize: true}

// Seal links ev to prev (the hash of the task's previous event, nil for the
// first), computes its hash, sets ev.PrevHash and ev.Hash, and returns the
// bytes to store.
func Seal(ev *stewardv1.Event, prev []byte) ([]byte, error) {
	ev.PrevHash = prev
	ev.Hash = nil
	body, err := canonical.MarshalAppend(make([]byte, 0, canonical.Size(ev)+trailerSize), ev)
	if err != nil {
		return nil, fmt.Errorf("seal event: %w", err)
	}
	sum := sha256.Sum256(body)
	ev.Hash = sum[:]
	data := protowire.AppendTag(body, hashField, protowire.BytesType)
	return protowire.AppendBytes(data, sum[:]), nil
}

// hashTag is how the hash field starts in stored bytes: its tag and its
// length, which is HashSize.
var hashTag = [3]byte(protowire.AppendVarint(protowire.AppendTag(nil, hashField, protowire.BytesType), HashSize))

// ErrBadHash means an event's stored bytes do not match its hash.
var ErrBadHash = errors.New("hash does not match the event's content")

// ErrUnknownType means an event's payload is of a type this build does not
// know: a newer build wrote it. Its hash holds and it is no one's mistake,
// so a reader leaves it for a build that knows it rather than setting it
// aside (docs/compatibility.md, "Events of a newer build").
var ErrUnknownType = errors.New("event type unknown to this build")

// Open decodes stored bytes and checks that they hash to the hash they
// carry. It does not check the link to the previous event; Chain does.
func Open(data []byte) (*stewardv1.Event, error) {
	ev := &stewardv1.Event{}
	if err := proto.Unmarshal(data, ev); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	if len(data) < trailerSize {
		return ev, ErrBadHash
	}
	body, trailer := data[:len(data)-trailerSize], data[len(data)-trailerSize:]
	if len(ev.Hash) != HashSize || !bytes.Equal(trailer[:len(hashTag)], hashTag[:]) || !bytes.Equal(trailer[len(hashTag):], ev.Hash) {
		return ev, ErrBadHash
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], ev.Hash) {
		return ev, ErrBadHash
	}
	// The type travels unhashed in a message header for routing; the one
	// in the envelope is hashed and must name the payload it sits beside.
	if ev.Type != "" && TypeOf(ev) == "" && Owner(ev.Type) == "" && len(ev.ProtoReflect().GetUnknown()) > 0 {
		return ev, fmt.Errorf("%w: %s", ErrUnknownType, ev.Type)
	}
	if ev.Type == "" || ev.Type != TypeOf(ev) {
		return ev, fmt.Errorf("type %q does not match the payload", ev.Type)
	}
	return ev, nil
}
