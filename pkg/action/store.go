package action

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
)

// The content buckets: values keyed by the task they are content of and
// their SHA-256 (Key), written once, never changed.
const (
	// RequestBucket holds canonical requests (an action's request_ref).
	RequestBucket = "STEWARD_REQUESTS"
	// ResultBucket holds tool results (an outcome's result_ref).
	ResultBucket = "STEWARD_RESULTS"
)

// MaxInlineRequest is the largest canonical request an action carries
// inline, in its request field, instead of in the request store: a small
// request then costs no KV put on proposal and no KV get in governance or
// before dispatch. The bound is small because an inline request is part of
// every copy of the action — the ActionProposed event, the folded task's
// ledger, GetTask's answer — so 1 KiB keeps a task at its default cap of
// 1000 actions well inside a 4 MiB gRPC message, while the typical call
// (a few short parameters) fits.
const MaxInlineRequest = 1 << 10

// MaxResult is the largest tool result Steward keeps: the HTTP adapter
// fails a larger answer, a settlement refuses one, and the state plane
// refuses to serve one (GetResult). It sits here, with the store the
// results live in, so that the planes that write results and the one that
// reads them share one bound.
const MaxResult = 4 << 20

// Inline reports whether a canonical request, or a result, of n bytes is
// carried inline (same bound, same reasons).
func Inline(n int) bool { return n > 0 && n <= MaxInlineRequest }

// Store keeps immutable blobs by task and hash in one KV bucket. It is
// safe for concurrent use.
type Store struct {
	kv   jetstream.KeyValue
	name string
	js   jetstream.JetStream
	// shared: Put writes the hash-alone key (Shared).
	shared bool
}

// Shared returns s writing new content under its hash alone, the key form
// of the builds before keys named their task, which read no other: for a
// rolling upgrade from such a build (steward --content-keys=shared,
// docs/compatibility.md), while an earlier replica may read what this one
// writes. Archives leave content under such keys (docs/archives.md). Both
// forms read either way.
func (s *Store) Shared() *Store {
	c := *s
	c.shared = true
	return &c
}

// RefOf is the reference Put gives taskID's content of hash.
func (s *Store) RefOf(taskID, hash string) string { return s.stored(taskID, hash).String() }

func (s *Store) stored(taskID, hash string) StoredRef {
	if s.shared {
		taskID = ""
	}
	return StoredRef{Bucket: s.name, TaskID: taskID, Hash: hash}
}

// OpenStore opens (creating if missing) a content bucket. It is
// write-once (bucket.Config.WriteOnce): a key's bytes, once stored, are
// there for good, whichever plane wrote them, until the archiver purges
// its task's keys (bucket.Config.Purgeable, docs/archives.md).
func OpenStore(ctx context.Context, js jetstream.JetStream, cfg bucket.Config) (*Store, error) {
	cfg.WriteOnce, cfg.Purgeable = true, true
	if cfg.Description == "" {
		cfg.Description = "Steward content by task and SHA-256"
	}
	kv, err := bucket.Open(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{kv: kv, name: cfg.Name, js: js}, nil
}

// Put stores data as content of task taskID and returns its reference
// (kv://BUCKET/<task id>.<hash>) and hash. The key names the task so that
// archiving a task can purge its content (`<task id>.>`) without touching
// another task's, even one holding the same bytes: each task has its own
// copy, and identical content is no longer shared across tasks. Bytes
// stored before under the same key are the same bytes, and a store
// refuses to overwrite a key, so a second Put of them is a success, which
// costs two round trips (the refusal and a read) instead of one.
func (s *Store) Put(ctx context.Context, taskID string, data []byte) (ref, hash string, err error) {
	if !eventlog.ValidTaskID(taskID) {
		return "", "", errs.New(errs.Internal, "store content of %s: %s", errs.Quote(taskID), eventlog.TaskIDRule)
	}
	h := RequestHash(data)
	r := s.stored(taskID, h)
	if _, err := s.kv.Create(ctx, r.Key(), data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return "", "", errs.Wrap(errs.Unavailable, err, "store %s", r.Key())
	}
	return r.String(), h, nil
}

// Get returns the bytes stored under ref after checking that they still
// hash to wantHash: the execution plane calls it before every dispatch.
func (s *Store) Get(ctx context.Context, ref, wantHash string) ([]byte, error) {
	r, err := ParseRef(ref)
	if err != nil || r.Bucket != s.name {
		return nil, errs.New(errs.Corrupt, "%s is not a reference into %s", errs.Quote(ref), s.name)
	}
	if r.Hash != wantHash {
		return nil, errs.New(errs.Corrupt, "%s names %s, not %s", ref, r.Hash, wantHash)
	}
	data, err := s.value(ctx, r.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, errs.New(errs.Corrupt, "%s is missing from the store", ref)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "read %s", ref)
	}
	if got := RequestHash(data); got != wantHash {
		return nil, errs.New(errs.Corrupt, "%s hashes to %s, not %s", ref, got, wantHash)
	}
	return data, nil
}

// value reads key's bytes. A key is read by whoever holds a reference to
// it, written before the reference was, so a replica's miss is asked of the
// leader (bucket.Get).
func (s *Store) value(ctx context.Context, key string) ([]byte, error) {
	e, err := bucket.Get(ctx, s.js, s.kv, key)
	return e.Value, err
}

// Request returns an action's canonical request after checking that it
// hashes to wantHash: the inline copy when there is one (inline non-empty),
// else the bytes stored under ref. A mismatch is Corrupt either way, as from
// Get, so that what runs is exactly what was approved whichever way it came.
func (s *Store) Request(ctx context.Context, inline []byte, ref, wantHash string) ([]byte, error) {
	return s.read(ctx, "request", inline, ref, wantHash)
}

// Result returns a succeeded outcome's result, checked against its hash as
// Request checks a request: inline when it came inline, else stored. An
// inline result needs no store: a nil Store reads it.
func (s *Store) Result(ctx context.Context, inline []byte, ref, wantHash string) ([]byte, error) {
	return s.read(ctx, "result", inline, ref, wantHash)
}

func (s *Store) read(ctx context.Context, what string, inline []byte, ref, wantHash string) ([]byte, error) {
	if len(inline) == 0 {
		return s.Get(ctx, ref, wantHash)
	}
	if got := RequestHash(inline); got != wantHash {
		return nil, errs.New(errs.Corrupt, "the inline %s hashes to %s, not %s", what, got, wantHash)
	}
	return inline, nil
}

// Keep returns how data travels: inline (data itself, no ref) when it is
// small enough (Inline), else stored (its ref); and its hash either way.
func (s *Store) Keep(ctx context.Context, taskID string, data []byte) (inline []byte, ref, hash string, err error) {
	if Inline(len(data)) {
		return data, "", RequestHash(data), nil
	}
	ref, hash, err = s.Put(ctx, taskID, data)
	return nil, ref, hash, err
}

// CopyTo stores the content at ref, checked against hash, under taskID's
// own key, whatever form s writes: a fork reads what it carries from its
// parent there (task.OwnRef), after the parent's keys are purged.
func (s *Store) CopyTo(ctx context.Context, ref, hash, taskID string) error {
	data, err := s.Get(ctx, ref, hash)
	if err != nil {
		return err
	}
	key := Key(taskID, hash)
	if _, err := s.kv.Create(ctx, key, data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return errs.Wrap(errs.Unavailable, err, "store %s", key)
	}
	return nil
}
