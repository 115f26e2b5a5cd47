package eventlog

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/bucket"
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
// first value recorded otherwise, and the record's revision when this call
// made it (0 otherwise). It is a "first one wins" across tasks, where a
// task's own log cannot be the unit: pkg/requestid records there what
// each request id was first used for. Keys are KV keys ([-_=/.A-Za-z0-9]);
// a record lasts FirstUseTTL unless ForgetFirstUse removes it sooner.
func (l *Log) FirstUse(ctx context.Context, key string, value []byte) ([]byte, uint64, error) {
	kv, err := l.firstUseBucket(ctx)
	if err != nil {
		return nil, 0, err
	}
	for range 3 {
		rev, err := kv.Create(ctx, key, value)
		if err == nil {
			return value, rev, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, 0, errs.Wrap(errs.Unavailable, err, "record first use of %s", key)
		}
		// What the key holds is the leader's word: a follower may answer
		// with nothing yet, or with a record forgotten since, which
		// Create's own look (a direct get) may have taken as live.
		first, err := bucket.Latest(ctx, l.js, DefaultFirstUseBucket, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			continue // gone between the two calls: record it now
		case err != nil:
			return nil, 0, errs.Wrap(errs.Unavailable, err, "read first use of %s", key)
		case first.Deleted:
			// Forgotten: record it over the marker, unless another use
			// does so first.
			if rev, err := kv.Update(ctx, key, value, first.Revision); err == nil {
				return value, rev, nil
			}
			continue
		}
		return first.Value, 0, nil
	}
	return nil, 0, errs.New(errs.Conflict, "the first use of %s keeps changing; try again", key)
}

// ForgetFirstUse removes the record FirstUse made at revision, if it is
// still that one: a use that was refused before it recorded anything
// leaves the key free for the next.
func (l *Log) ForgetFirstUse(ctx context.Context, key string, revision uint64) error {
	kv, err := l.firstUseBucket(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, key, jetstream.LastRevision(revision)); err != nil {
		return errs.Wrap(errs.Unavailable, err, "forget first use of %s", key)
	}
	return nil
}

// FirstUseTTL is how long a first use is remembered. A retry comes within
// minutes; after this, an id reused on the same task is still recognised
// by its event id on the task's log, and only a reuse for another task or
// another command goes unnoticed.
const FirstUseTTL = 30 * 24 * time.Hour

func (l *Log) firstUseBucket(ctx context.Context) (jetstream.KeyValue, error) {
	l.firstUse.mu.Lock()
	defer l.firstUse.mu.Unlock()
	if l.firstUse.kv != nil {
		return l.firstUse.kv, nil
	}
	// Not write-once: ForgetFirstUse deletes a key.
	kv, err := bucket.Open(ctx, l.js, bucket.Config{
		Name: DefaultFirstUseBucket, Description: "Steward request ids: what each was first used for; first create wins",
		Replicas: l.cfg.Replicas, Storage: l.cfg.Storage, TTL: FirstUseTTL, Harden: l.cfg.HardenBuckets, Logger: l.cfg.Logger,
	})
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "record first use")
	}
	l.firstUse.kv = kv
	return kv, nil
}
