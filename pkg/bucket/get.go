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
	// Deleted says the key's last revision is a delete or purge marker
	// (Latest only: Get answers such a key not found).
	Deleted bool
}

// Get reads key from kv, a bucket on js, or returns
// jetstream.ErrKeyNotFound. KeyValue.Get is a direct get, which any replica
// answers, and on a replicated bucket a follower that has not applied a
// write yet answers "not found" for a key a moment old; so a miss is asked
// again of the bucket's leader (Latest), whose word is final. A key
// deleted or purged is not found. Without js, a miss is final.
//
// Get suits keys that, once written, never change (the content-addressed
// stores, kv.append's records): a follower can then be behind only by
// missing a key. Where a key can be deleted and written again, ask Latest.
func Get(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, key string) (Entry, error) {
	e, err := kv.Get(ctx, key)
	if err == nil {
		return Entry{Value: e.Value(), Revision: e.Revision()}, nil
	}
	if js == nil || !errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, err
	}
	latest, err := Latest(ctx, js, kv.Bucket(), key)
	if err == nil && latest.Deleted {
		return Entry{}, jetstream.ErrKeyNotFound
	}
	return latest, err
}

// Latest reads key's last revision in the bucket name from the bucket's
// leader (pkg/leader), delete and purge markers included (Deleted), or
// returns jetstream.ErrKeyNotFound when the key has none.
func Latest(ctx context.Context, js jetstream.JetStream, name, key string) (Entry, error) {
	m, err := leader.Last(ctx, js, StreamName(name), Subject(name, key))
	if leader.IsNotFound(err) {
		return Entry{}, jetstream.ErrKeyNotFound
	}
	if err != nil {
		return Entry{}, err
	}
	return Entry{Value: m.Data, Revision: m.Sequence, Deleted: m.Header.Get(kvOperation) != ""}, nil
}

// kvOperation is the header a KV delete or purge marker carries.
const kvOperation = "KV-Operation"
