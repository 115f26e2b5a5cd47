package bucket

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/leader"
)

// Entry is a key's value and the revision that wrote it.
type Entry struct {
	Value    []byte
	Revision uint64
}

// Get reads key from kv, a bucket on js, or returns
// jetstream.ErrKeyNotFound. KeyValue.Get is a direct get, which any replica
// answers, and on a replicated bucket a follower that has not applied a
// write yet answers "not found" for a key a moment old; so a miss is asked
// again of the bucket's leader (pkg/leader), whose word is final. A key
// deleted or purged is not found. Without js, a miss is final.
func Get(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, key string) (Entry, error) {
	e, err := kv.Get(ctx, key)
	if err == nil {
		return Entry{Value: e.Value(), Revision: e.Revision()}, nil
	}
	if js == nil || !errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, err
	}
	m, err := leader.Last(ctx, js, StreamName(kv.Bucket()), Subject(kv.Bucket(), key))
	if leader.IsNotFound(err) || err == nil && m.Header.Get(kvOperation) != "" {
		return Entry{}, jetstream.ErrKeyNotFound
	}
	if err != nil {
		return Entry{}, err
	}
	return Entry{Value: m.Data, Revision: m.Sequence}, nil
}

// kvOperation is the header a KV delete or purge marker carries.
const kvOperation = "KV-Operation"
