package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
)

// ViewsBucket is the object store the state plane keeps snapshots of its
// task views in (docs/snapshots.md).
const ViewsBucket = "STEWARD_STATE_VIEWS"

// ViewsTTL is how long a snapshot is kept. Planes never delete one (they
// may not purge, pkg/natsperm); the bucket's age limit does, and a plane
// writes a fresh snapshot well inside it (Config.SnapshotInterval).
const ViewsTTL = 48 * time.Hour

// viewsPrefix begins every snapshot's name; the covered sequence, zero
// padded, ends it, so that names sort as snapshots age and two replicas
// never write over a newer snapshot with an older one.
const viewsPrefix = "views-"

// ViewStore keeps snapshots of the task views. It is safe for concurrent
// use.
type ViewStore struct{ obs jetstream.ObjectStore }

// OpenViewStore opens the snapshot bucket on js, creating it when missing.
func OpenViewStore(ctx context.Context, js jetstream.JetStream) (*ViewStore, error) {
	obs, err := js.ObjectStore(ctx, ViewsBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: ViewsBucket, Description: "Steward state plane: snapshots of its task views", TTL: ViewsTTL,
			Storage: jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			obs, err = js.ObjectStore(ctx, ViewsBucket)
		}
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "open the %s bucket", ViewsBucket)
	}
	return &ViewStore{obs: obs}, nil
}

func viewsName(covered uint64) string { return fmt.Sprintf("%s%020d", viewsPrefix, covered) }

// Covered returns the sequences the stored snapshots cover, newest first.
func (s *ViewStore) Covered(ctx context.Context) ([]uint64, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, info := range infos {
		seq, err := strconv.ParseUint(strings.TrimPrefix(info.Name, viewsPrefix), 10, 64)
		if err == nil && strings.HasPrefix(info.Name, viewsPrefix) && !info.Deleted {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out, nil
}

// Put stores the snapshot r covering covered, in chunks (the object
// store's), and returns its size.
func (s *ViewStore) Put(ctx context.Context, covered uint64, r io.Reader) (uint64, error) {
	info, err := s.obs.Put(ctx, jetstream.ObjectMeta{Name: viewsName(covered)}, r)
	if err != nil {
		return 0, err
	}
	return info.Size, nil
}

// Get opens the snapshot covering covered; its digest is checked as it
// is read to the end.
func (s *ViewStore) Get(ctx context.Context, covered uint64) (io.ReadCloser, error) {
	return s.obs.Get(ctx, viewsName(covered))
}
