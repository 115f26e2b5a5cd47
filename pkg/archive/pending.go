package archive

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/eventlog"
)

// pendingPrefix holds, for each tree whose events are being purged, its
// task ids: written before the purge of its events, removed once its
// content is purged too. Its tasks have left the state plane's lists once
// their events went, so this is how a run after a crash between the two
// purges finds the content still to purge (Pending).
const pendingPrefix = "pending/"

// MarkPending notes that the tree rooted at root, of tasks ids, is being
// purged.
func (a *Archive) MarkPending(ctx context.Context, root string, ids []string) error {
	if !eventlog.ValidTaskID(root) {
		return fmt.Errorf("archive: %q is not a task id", root)
	}
	return a.store.Put(ctx, pendingPrefix+root, []byte(strings.Join(ids, "\n")))
}

// Pending returns the trees marked pending, root → task ids.
func (a *Archive) Pending(ctx context.Context) (map[string][]string, error) {
	keys, err := a.store.List(ctx, pendingPrefix)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, k := range keys {
		data, err := a.store.Get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue // done by another run meanwhile
		}
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(k, pendingPrefix)] = strings.Split(string(data), "\n")
	}
	return out, nil
}

// PurgeContent purges the content of the tree rooted at root, of tasks
// ids, whose events are gone (Purger.PurgeContent), then its pending
// mark: a task still on the log keeps its content, and a later run that
// archives its tree again marks it anew.
func (a *Archive) PurgeContent(ctx context.Context, p *Purger, root string, ids []string) (Content, error) {
	c, err := p.PurgeContent(ctx, ids)
	if err != nil {
		return c, fmt.Errorf("archived %s, its content kept: %w", root, err)
	}
	return c, a.store.Delete(ctx, pendingPrefix+root)
}

// FinishPending purges the content of each tree marked pending: what a
// run that stopped between the purge of a tree's events and that of its
// content left.
func (a *Archive) FinishPending(ctx context.Context, p *Purger) (Content, error) {
	var all Content
	trees, err := a.Pending(ctx)
	if err != nil {
		return all, fmt.Errorf("purges under way: %w", err)
	}
	for _, root := range slices.Sorted(maps.Keys(trees)) {
		c, err := a.PurgeContent(ctx, p, root, trees[root])
		if err != nil {
			return all, err
		}
		all.Purged = append(all.Purged, c.Purged...)
		if len(c.Refused) > 0 {
			all.Refused = c.Refused
		}
	}
	return all, nil
}
