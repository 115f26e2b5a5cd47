// Package archive keeps ended tasks for years outside the hot log
// (docs/archives.md): each tree of ended tasks (a task with its sub-tasks
// and ancestors) is one audit bundle (pkg/auditbundle), written to a Store
// — a directory or an S3-compatible bucket — and read back by id, so that
// GetTask, the receipt and `steward audit verify` work once the log no
// longer holds the task.
//
// The layout of a store:
//
//	bundles/<root task id>        the tree's bundle, auditbundle.Marshal's bytes
//	tasks/<task id>               the root id of the tree the task is in
//	tenants/_<tenant>/<root id>   the root id again, to list a tenant's trees
//	                              (tenants/-/ for the default tenant)
//	pending/<root id>             the tree's task ids while its events and
//	                              content are purged (MarkPending)
//
// A bundle is written, read back and compared before its index entries,
// and the index before anything is purged, so a crash at any point leaves
// either the hot copy or a whole archived one. Archive is safe for
// concurrent use if its Store is.
package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/steward-run/steward/pkg/auditbundle"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// ErrNotFound is what a Store's Get returns for a key it does not hold,
// and Archive's reads for a task it has not archived.
var ErrNotFound = errors.New("not in the archive")

// Store keeps objects by key ("bundles/…"): a directory (Dir) or an
// S3-compatible bucket (S3). Keys are slash-separated, printable and
// never start with a slash or hold "..".
type Store interface {
	// Put writes data (never empty: some stores refuse an empty object)
	// under key, replacing what was there, durably.
	Put(ctx context.Context, key string, data []byte) error
	// Get reads key, or fails with ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns the keys under prefix (which ends in "/"), sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes key; a key it does not hold is no error. Only the
	// marks of purges under way are deleted (pending/).
	Delete(ctx context.Context, key string) error
}

// Archive reads and writes tasks' bundles in a Store.
type Archive struct{ store Store }

// New returns an Archive over store.
func New(store Store) *Archive { return &Archive{store: store} }

func bundleKey(root string) string { return "bundles/" + root }
func taskKey(id string) string     { return "tasks/" + id }

// tenantPrefix is where a tenant's trees are listed: the default tenant,
// "", under "-", and a named one under "_" and its escaped name, so that
// no name ("-", ".", "..") meets another's folder or leaves tenants/.
func tenantPrefix(tenant string) string {
	if tenant == "" {
		return "tenants/-/"
	}
	return "tenants/_" + url.PathEscape(tenant) + "/"
}

// Put archives b, the bundle of the tree rooted at root, of tenant: the
// bundle, read back and compared, then one index entry per task. Writing
// the same bundle again is harmless.
func (a *Archive) Put(ctx context.Context, root, tenant string, b *stewardv1.AuditBundle) error {
	if !eventlog.ValidTaskID(root) {
		return fmt.Errorf("archive: %q is not a task id", root)
	}
	data, err := auditbundle.Marshal(b)
	if err != nil {
		return err
	}
	if err := a.store.Put(ctx, bundleKey(root), data); err != nil {
		return fmt.Errorf("archive %s: %w", root, err)
	}
	back, err := a.store.Get(ctx, bundleKey(root))
	if err != nil {
		return fmt.Errorf("archive %s: read back: %w", root, err)
	}
	if !bytes.Equal(back, data) {
		return fmt.Errorf("archive %s: the store gave back %d bytes that differ from the %d written", root, len(back), len(data))
	}
	for _, t := range b.Tasks {
		if !eventlog.ValidTaskID(t.TaskId) {
			return fmt.Errorf("archive %s: the bundle holds %q, not a task id", root, t.TaskId)
		}
		if err := a.store.Put(ctx, taskKey(t.TaskId), []byte(root)); err != nil {
			return fmt.Errorf("archive %s: index %s: %w", root, t.TaskId, err)
		}
	}
	return a.store.Put(ctx, tenantPrefix(tenant)+root, []byte(root))
}

// Bundle returns the bundle the task is archived in, and the root of its
// tree; ErrNotFound when it is not archived.
func (a *Archive) Bundle(ctx context.Context, taskID string) (*stewardv1.AuditBundle, string, error) {
	if !eventlog.ValidTaskID(taskID) {
		return nil, "", ErrNotFound
	}
	root, err := a.store.Get(ctx, taskKey(taskID))
	if err != nil {
		return nil, "", err
	}
	b, err := a.tree(ctx, string(root))
	return b, string(root), err
}

// tree reads the bundle of the tree rooted at root.
func (a *Archive) tree(ctx context.Context, root string) (*stewardv1.AuditBundle, error) {
	if !eventlog.ValidTaskID(root) {
		return nil, fmt.Errorf("archive: the index names %q, not a task id", root)
	}
	data, err := a.store.Get(ctx, bundleKey(root))
	if err != nil {
		return nil, fmt.Errorf("archive: bundle %s: %w", root, err)
	}
	return auditbundle.Unmarshal(data)
}

// Events returns the archived task's events as they were stored on the
// log, in order, unverified (as eventlog.ReadRaw); ErrNotFound when it is
// not archived.
func (a *Archive) Events(ctx context.Context, taskID string) ([]eventlog.Raw, error) {
	b, _, err := a.Bundle(ctx, taskID)
	if err != nil {
		return nil, err
	}
	var raws []eventlog.Raw
	for _, t := range b.Tasks {
		if t.TaskId == taskID {
			for _, e := range t.Events {
				raws = append(raws, eventlog.Raw{Sequence: e.Sequence, Data: e.Data})
			}
		}
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("archive: the bundle indexed for %s holds none of its events", taskID)
	}
	return raws, nil
}

// TaskRecords opens taskID's events in b.
func TaskRecords(b *stewardv1.AuditBundle, taskID string) ([]*stewardv1.EventRecord, error) {
	var recs []*stewardv1.EventRecord
	for _, t := range b.Tasks {
		if t.TaskId != taskID {
			continue
		}
		for _, e := range t.Events {
			ev, err := event.Open(e.Data)
			if err != nil {
				return nil, fmt.Errorf("archive: task %s at sequence %d: %w", taskID, e.Sequence, err)
			}
			recs = append(recs, &stewardv1.EventRecord{Sequence: e.Sequence, Event: ev})
		}
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("archive: the bundle indexed for %s holds none of its events", taskID)
	}
	return recs, nil
}

// Trees lists the roots of tenant's archived trees.
func (a *Archive) Trees(ctx context.Context, tenant string) ([]string, error) {
	keys, err := a.store.List(ctx, tenantPrefix(tenant))
	if err != nil {
		return nil, err
	}
	roots := make([]string, 0, len(keys))
	for _, k := range keys {
		roots = append(roots, strings.TrimPrefix(k, tenantPrefix(tenant)))
	}
	return roots, nil
}
