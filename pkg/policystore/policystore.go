// Package policystore keeps what governance decided with, for an auditor:
// each policy evaluation's full canonical input, and the sources of each
// policy bundle revision with the OPA version it ran under (docs/audit.md,
// "Audit bundles").
//
// Both live in one write-once KV bucket of their own, not on the log and
// not among the results: an input is keyed by its task and its SHA-256,
// which is the snapshot's input_hash (input.<task id>.<hash>), so
// identical inputs of a task — the same proposal re-evaluated, a
// redelivery — share one key, where events on the log would repeat it,
// and archiving the task purges its inputs (input.<task id>.>) and no
// other task's; and a bucket governance alone writes (pkg/natsperm) keeps
// policy's facts out of the results store, which execution and control
// write and GetResult serves. Inputs kept before archives are under
// input.<hash> and are still read. Sources are shared by every task that
// a revision judged (sources.<revision hex>) and are never purged. The
// state plane serves an input only with a task that references it
// (AuditService.ExportBundle).
//
// A Store is safe for concurrent use.
package policystore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Bucket is the name of the KV bucket.
const Bucket = "STEWARD_POLICY"

// Key prefixes: an input under its hash, a bundle's sources under the hex
// of its revision.
const (
	inputKey   = "input."
	sourcesKey = "sources."
)

// Store reads and writes the bucket.
type Store struct {
	kv jetstream.KeyValue
	js jetstream.JetStream
	// shared: PutInput writes input.<hash> (Shared).
	shared bool
}

// Shared returns s keeping new inputs under input.<hash>, the key of the
// builds before inputs were keyed by task, which read no other: for a
// rolling upgrade from such a build (steward --content-keys=shared,
// docs/compatibility.md). Archives leave such inputs. Input reads both.
func (s *Store) Shared() *Store {
	c := *s
	c.shared = true
	return &c
}

// Open opens (creating if missing) the bucket on js.
func Open(ctx context.Context, js jetstream.JetStream, cfg bucket.Config) (*Store, error) {
	cfg.Name, cfg.WriteOnce, cfg.Purgeable = Bucket, true, true
	if cfg.Description == "" {
		cfg.Description = "Steward policy inputs and bundle sources, for auditors"
	}
	kv, err := bucket.Open(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{kv: kv, js: js}, nil
}

// InputHash is the hex SHA-256 of a canonical input: its key, and the
// snapshot's input_hash.
func InputHash(canonical []byte) string {
	h := sha256.Sum256(canonical)
	return hex.EncodeToString(h[:])
}

// PutInput stores a canonical input of task taskID under its hash.
// Storing it again is a success: the bytes under a hash are the same
// bytes.
func (s *Store) PutInput(ctx context.Context, taskID string, canonical []byte) (string, error) {
	if !eventlog.ValidTaskID(taskID) {
		return "", errs.New(errs.Internal, "keep a policy input of %s: %s", errs.Quote(taskID), eventlog.TaskIDRule)
	}
	h := InputHash(canonical)
	if s.shared {
		return h, s.create(ctx, inputKey+h, canonical)
	}
	return h, s.create(ctx, TaskInputs(taskID)+h, canonical)
}

// TaskInputs is the prefix of the keys of taskID's inputs: the archiver
// purges the bucket's subjects TaskInputs(id)+">".
func TaskInputs(taskID string) string { return inputKey + taskID + "." }

// Input returns task taskID's input stored under hash, checked against
// it; ok is false when none is (a snapshot recorded before inputs were
// kept, or whose task was archived). An input kept before inputs were
// keyed by task is read by its hash alone.
func (s *Store) Input(ctx context.Context, taskID, hash string) (data []byte, ok bool, err error) {
	if eventlog.ValidTaskID(taskID) {
		data, ok, err = s.get(ctx, TaskInputs(taskID)+hash)
	}
	if err == nil && !ok {
		data, ok, err = s.get(ctx, inputKey+hash)
	}
	if err != nil || !ok {
		return nil, ok, err
	}
	if got := InputHash(data); got != hash {
		return nil, false, errs.New(errs.Corrupt, "policy input %s hashes to %s", hash, got)
	}
	return data, true, nil
}

// PutSources stores a bundle revision's sources once.
func (s *Store) PutSources(ctx context.Context, src *stewardv1.PolicySources) error {
	key, err := sourcesKeyOf(src.GetRevision())
	if err != nil {
		return err
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(src)
	if err != nil {
		return err
	}
	return s.create(ctx, key, data)
}

// Sources returns the sources of revision; ok is false when none are
// stored.
func (s *Store) Sources(ctx context.Context, revision string) (*stewardv1.PolicySources, bool, error) {
	key, err := sourcesKeyOf(revision)
	if err != nil {
		return nil, false, err
	}
	data, ok, err := s.get(ctx, key)
	if err != nil || !ok {
		return nil, ok, err
	}
	src := &stewardv1.PolicySources{}
	if err := proto.Unmarshal(data, src); err != nil {
		return nil, false, errs.Wrap(errs.Corrupt, err, "policy sources %s", revision)
	}
	return src, true, nil
}

func sourcesKeyOf(revision string) (string, error) {
	h, ok := strings.CutPrefix(revision, "sha256:")
	if _, err := hex.DecodeString(h); !ok || err != nil || len(h) != 2*sha256.Size {
		return "", fmt.Errorf("policy revision %q is not sha256:<hex>", revision)
	}
	return sourcesKey + h, nil
}

func (s *Store) create(ctx context.Context, key string, data []byte) error {
	if _, err := s.kv.Create(ctx, key, data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return errs.Wrap(errs.Unavailable, err, "store %s", key)
	}
	return nil
}

func (s *Store) get(ctx context.Context, key string) ([]byte, bool, error) {
	e, err := bucket.Get(ctx, s.js, s.kv, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, errs.Wrap(errs.Unavailable, err, "read %s", key)
	}
	return e.Value, true, nil
}
