package action

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
)

// RequestBucket is the KV bucket that holds canonical requests, keyed by
// their hash: content-addressed, written once, never changed.
const RequestBucket = "STEWARD_REQUESTS"

// refPrefix starts every request_ref.
const refPrefix = "kv://" + RequestBucket + "/"

// Store keeps canonical requests. It is safe for concurrent use.
type Store struct {
	kv jetstream.KeyValue
}

// OpenStore opens (creating if missing) the request bucket.
func OpenStore(ctx context.Context, js jetstream.JetStream, replicas int) (*Store, error) {
	kv, err := js.KeyValue(ctx, RequestBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      RequestBucket,
			Description: "Steward canonical action requests, by hash",
			History:     1,
			Replicas:    max(replicas, 1),
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, RequestBucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open request store: %w", err)
	}
	return &Store{kv: kv}, nil
}

// Put stores canonical request bytes once and returns their reference.
// Storing the same bytes again is a no-op.
func (s *Store) Put(ctx context.Context, canonical []byte) (string, error) {
	h := RequestHash(canonical)
	if _, err := s.kv.Create(ctx, h, canonical); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return "", errs.Wrap(errs.Unavailable, err, "store request %s", h)
	}
	return refPrefix + h, nil
}

// Get returns the request stored under ref after checking that it still
// hashes to wantHash: the execution plane calls it before every dispatch.
func (s *Store) Get(ctx context.Context, ref, wantHash string) ([]byte, error) {
	h, ok := strings.CutPrefix(ref, refPrefix)
	if !ok {
		return nil, errs.New(errs.Corrupt, "request_ref %q is not a request reference", ref)
	}
	e, err := s.kv.Get(ctx, h)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, errs.New(errs.Corrupt, "request %s is missing from the store", h)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "read request %s", h)
	}
	if got := RequestHash(e.Value()); got != wantHash || h != wantHash {
		return nil, errs.New(errs.Corrupt, "stored request hashes to %s, the permit names %s", got, wantHash)
	}
	return e.Value(), nil
}
