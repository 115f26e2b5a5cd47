package state

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/bucket"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/natsperm"
)

// ViewsBucket is the bucket the state plane keeps snapshots of its task
// views in (docs/snapshots.md).
const ViewsBucket = natsperm.StateViewsBucket

// ViewsTTL is how long a snapshot's keys are kept. Planes never delete a
// key (they may not purge, pkg/natsperm); the bucket's age limit does,
// and a plane writes a fresh snapshot well inside it (snapshotDue).
const ViewsTTL = 48 * time.Hour

// viewsChunk is the size of a snapshot's chunks: well under the smallest
// message a NATS server takes (1 MiB by default), and what a write holds
// in memory at most.
const viewsChunk = 256 << 10

// headKey holds the manifest of the newest snapshot. It is only ever
// replaced by a newer one (by covered sequence), compare-and-set, so two
// replicas writing at once never put an older snapshot over a newer one.
const headKey = "head"

// ViewStore keeps snapshots of the task views, in chunks, in a KV bucket:
// each read is a direct get, answered by any replica, and needs no
// consumer. It is safe for concurrent use.
type ViewStore struct{ kv jetstream.KeyValue }

// OpenViewStore opens the snapshot bucket on js, creating it with
// replicas copies when missing.
func OpenViewStore(ctx context.Context, js jetstream.JetStream, replicas int) (*ViewStore, error) {
	kv, err := bucket.Open(ctx, js, bucket.Config{Name: ViewsBucket, Description: "Steward state plane: snapshots of its task views",
		TTL: ViewsTTL, Replicas: replicas, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, err
	}
	return &ViewStore{kv: kv}, nil
}

func manifestKey(covered uint64) string { return fmt.Sprintf("v%d.m", covered) }

// chunkKey names a chunk by the write it belongs to (its sequence and
// when it was written, both in its manifest) as well as its place: two
// replicas that write a snapshot of the same sequence at once, or one
// that refreshes the newest, never put chunks under the other's manifest.
// The part (hotPart or stubPart) is the key's letter before its place.
func chunkKey(covered uint64, at time.Time, part byte, i int) string {
	return fmt.Sprintf("v%d.%d.%c%d", covered, at.UnixNano(), part, i)
}

// A snapshot's two parts (format 3): the views a plane needs to serve,
// and the evicted tasks' stubs, which it loads while it serves.
const (
	hotPart  = 'c'
	stubPart = 's'
)

// Newest returns the manifest of the newest snapshot, nil when there is
// none.
func (s *ViewStore) Newest(ctx context.Context) (*stewardv1.ViewsSnapshotManifest, error) {
	m, _, err := s.head(ctx)
	return m, err
}

func (s *ViewStore) head(ctx context.Context) (*stewardv1.ViewsSnapshotManifest, uint64, error) {
	e, err := s.kv.Get(ctx, headKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	m := &stewardv1.ViewsSnapshotManifest{}
	return m, e.Revision(), proto.Unmarshal(e.Value(), m)
}

// Manifest returns the manifest of the snapshot covering covered.
func (s *ViewStore) Manifest(ctx context.Context, covered uint64) (*stewardv1.ViewsSnapshotManifest, error) {
	e, err := s.kv.Get(ctx, manifestKey(covered))
	if err != nil {
		return nil, err
	}
	m := &stewardv1.ViewsSnapshotManifest{}
	return m, proto.Unmarshal(e.Value(), m)
}

// Put stores, as the snapshot covering covered, what write writes to
// its two parts (hot, then the stubs: viewstore's hotPart and
// stubPart), a chunk at a time as each fills, then makes it the newest
// unless a newer one is stored by then. It returns the manifest written.
func (s *ViewStore) Put(ctx context.Context, covered uint64, at time.Time, write func(hot, stubs io.Writer) error) (*stewardv1.ViewsSnapshotManifest, error) {
	hot := &chunkWriter{ctx: ctx, kv: s.kv, covered: covered, at: at, part: hotPart, sum: sha256.New()}
	stubs := &chunkWriter{ctx: ctx, kv: s.kv, covered: covered, at: at, part: stubPart, sum: sha256.New()}
	if err := write(hot, stubs); err != nil {
		return nil, err
	}
	for _, w := range []*chunkWriter{hot, stubs} {
		if err := w.flush(); err != nil {
			return nil, err
		}
	}
	m := &stewardv1.ViewsSnapshotManifest{CoveredSequence: covered, Chunks: uint32(hot.chunks), Size: hot.size, Sha256: hot.sum.Sum(nil), WrittenAt: timestamppb.New(at)}
	if stubs.chunks > 0 {
		m.StubChunks, m.StubSize, m.StubSha256 = uint32(stubs.chunks), stubs.size, stubs.sum.Sum(nil)
	}
	data, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	if _, err := s.kv.Put(ctx, manifestKey(covered), data); err != nil {
		return nil, err
	}
	for {
		head, rev, err := s.head(ctx)
		if err != nil {
			return nil, err
		}
		if head.GetCoveredSequence() > covered {
			return m, nil // another replica's is newer; this one's keys age out
		}
		m.Previous = head.GetCoveredSequence()
		if head.GetCoveredSequence() == covered {
			m.Previous = head.GetPrevious()
		}
		data, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		if rev == 0 {
			_, err = s.kv.Create(ctx, headKey, data)
		} else {
			_, err = s.kv.Update(ctx, headKey, data, rev)
		}
		if err == nil || !moved(err) {
			return m, err
		}
		// Another replica moved the head first: look again.
	}
}

// chunkWriter puts what is written to it as chunks of viewsChunk bytes.
type chunkWriter struct {
	ctx     context.Context
	kv      jetstream.KeyValue
	covered uint64
	at      time.Time
	part    byte
	buf     bytes.Buffer
	chunks  int
	size    uint64
	sum     hash.Hash
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), viewsChunk-w.buf.Len())
		w.buf.Write(p[:k])
		p = p[k:]
		if w.buf.Len() == viewsChunk {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (w *chunkWriter) flush() error {
	if w.buf.Len() == 0 {
		return nil
	}
	if _, err := w.kv.Put(w.ctx, chunkKey(w.covered, w.at, w.part, w.chunks), w.buf.Bytes()); err != nil {
		return fmt.Errorf("put chunk %d: %w", w.chunks, err)
	}
	w.sum.Write(w.buf.Bytes())
	w.size += uint64(w.buf.Len())
	w.chunks++
	w.buf.Reset()
	return nil
}

// Open returns a reader of m's snapshot (its first part, hotPart), which
// gets its chunks as they are read and fails at the end if their bytes
// are not those m names.
func (s *ViewStore) Open(ctx context.Context, m *stewardv1.ViewsSnapshotManifest) io.Reader {
	return &chunkReader{ctx: ctx, kv: s.kv, m: m, part: hotPart, chunks: int(m.Chunks), want: m.Sha256, sum: sha256.New()}
}

// OpenStubs is Open of the snapshot's stubs part, empty when it has none.
func (s *ViewStore) OpenStubs(ctx context.Context, m *stewardv1.ViewsSnapshotManifest) io.Reader {
	return &chunkReader{ctx: ctx, kv: s.kv, m: m, part: stubPart, chunks: int(m.StubChunks), want: m.StubSha256, sum: sha256.New()}
}

type chunkReader struct {
	ctx    context.Context
	kv     jetstream.KeyValue
	m      *stewardv1.ViewsSnapshotManifest
	part   byte
	chunks int
	want   []byte
	next   int
	rest   []byte
	sum    hash.Hash
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		if r.next == r.chunks {
			if r.chunks > 0 && !bytes.Equal(r.sum.Sum(nil), r.want) {
				return 0, fmt.Errorf("snapshot %d: its chunks are not the bytes its manifest names", r.m.CoveredSequence)
			}
			return 0, io.EOF
		}
		e, err := r.kv.Get(r.ctx, chunkKey(r.m.CoveredSequence, r.m.WrittenAt.AsTime(), r.part, r.next))
		if err != nil {
			return 0, fmt.Errorf("snapshot %d, chunk %c%d: %w", r.m.CoveredSequence, r.part, r.next, err)
		}
		r.rest = e.Value()
		r.sum.Write(r.rest)
		r.next++
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// moved reports whether a compare-and-set of the head found it moved.
func moved(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) || errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}
