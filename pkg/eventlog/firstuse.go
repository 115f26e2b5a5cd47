package eventlog

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
)

// DefaultFirstUseBucket is the KV bucket FirstUse records in. Like the
// stream names it is part of the deployment contract.
const DefaultFirstUseBucket = "STEWARD_REQUEST_IDS"

// firstUses opens the first-use bucket on the first call that needs it,
// so that a Log costs nothing more to open and planes that never record a
// first use never create it.
type firstUses struct {
	mu sync.Mutex
	kv jetstream.KeyValue
}

// FirstUse records value under key unless the key holds a value already,
// and returns what the key holds: value when this call recorded it, the
// first value recorded otherwise. It is a "first one wins" across tasks,
// where a task's own log cannot be the unit: pkg/requestid records there
// what each request id was first used for. Keys are KV keys
// ([-_=/.A-Za-z0-9]); a key is never changed or removed.
func (l *Log) FirstUse(ctx context.Context, key string, value []byte) ([]byte, error) {
	kv, err := l.firstUseBucket(ctx)
	if err != nil {
		return nil, err
	}
	_, err = kv.Create(ctx, key, value)
	if err == nil {
		return value, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, errs.Wrap(errs.Unavailable, err, "record first use of %s", key)
	}
	e, err := kv.Get(ctx, key)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "read first use of %s", key)
	}
	return e.Value(), nil
}

func (l *Log) firstUseBucket(ctx context.Context) (jetstream.KeyValue, error) {
	l.firstUse.mu.Lock()
	defer l.firstUse.mu.Unlock()
	if l.firstUse.kv != nil {
		return l.firstUse.kv, nil
	}
	cfg := jetstream.KeyValueConfig{
		Bucket: DefaultFirstUseBucket, Description: "Steward request ids: what each was first used for; first create wins",
		History: 1, Replicas: l.cfg.Replicas, Storage: l.cfg.Storage,
	}
	kv, err := l.js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = l.js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = l.js.KeyValue(ctx, cfg.Bucket) // another plane created it first
		}
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, fmt.Errorf("open bucket %s: %w", cfg.Bucket, err), "record first use")
	}
	l.firstUse.kv = kv
	return kv, nil
}
