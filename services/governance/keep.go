package governance

import (
	"context"
	"sync"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/services/governance/policy"
)

// keptSources remembers which bundle revisions' sources this process has
// stored, so that each is stored once, not with every snapshot.
type keptSources struct {
	store *policystore.Store
	mu    sync.Mutex
	done  map[string]bool
}

// keep stores what an evaluation decided with — its canonical input, and
// the sources of the revision that evaluated it — so that an auditor can
// re-evaluate the snapshot offline (docs/audit.md), the input as taskID's
// (archiving the task purges it, docs/archives.md). It runs before the
// snapshot is appended, outside the conditional write: a snapshot on the
// log always has its input and sources stored. A redelivery stores the
// same bytes under the same keys, which is a success. The sources are
// stored before the first snapshot of a revision, whether it came with
// the load or a reload, rather than at the reload itself, which the
// engine's own watch makes: this way no reload can slip between. It
// reports whether both are kept: the snapshot says so (input_kept), in
// signed bytes, so that a bundle that leaves either out fails.
func (p *Plane) keep(ctx context.Context, taskID string, rec inputRecord, res policy.Result) (bool, error) {
	k := &p.kept
	if k.store == nil {
		return false, nil
	}
	if _, err := k.store.PutInput(ctx, taskID, rec.canonical); err != nil {
		return false, err
	}
	k.mu.Lock()
	done := k.done[res.Revision]
	k.mu.Unlock()
	if done {
		return true, nil
	}
	if res.Sources == nil {
		return false, nil
	}
	if err := k.store.PutSources(ctx, res.Sources); err != nil {
		return false, errs.Wrap(errs.Unavailable, err, "keep policy sources %s", res.Revision)
	}
	k.mu.Lock()
	if k.done == nil {
		k.done = map[string]bool{}
	}
	k.done[res.Revision] = true
	k.mu.Unlock()
	return true, nil
}
