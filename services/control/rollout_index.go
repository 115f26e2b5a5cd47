package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// rolloutIndex keeps what never changes of each rollout this plane has
// read: its tenant and tool (its start) and, once it ended, its fold — a
// ROLLED_BACK or COMPLETED rollout takes no more events (rollout.Apply).
// Every task's creation and every proposal asks for a tenant's rollouts,
// so without it each would read and fold the chain of every rollout ever
// started, of every tenant; with it, only the chains of the asking
// tenant's rollouts still ramping are read, fresh.
//
// It also keeps the ids of the rollouts started (startedIDs), with the
// stream sequence of the last rollout.started when they were listed.
type rolloutIndex struct {
	mu      sync.Mutex
	known   map[string]indexedRollout
	started startedList
}

// startedList is the ids of every rollout started, sorted, listed after
// the last rollout.started was the one at sequence last; listed false
// until a first listing.
type startedList struct {
	listed bool
	last   uint64
	ids    []string // read-only
}

type indexedRollout struct {
	tenant, tool string
	ended        *stewardv1.Rollout // nil while RAMPING; read-only
}

func newRolloutIndex() *rolloutIndex { return &rolloutIndex{known: map[string]indexedRollout{}} }

func (x *rolloutIndex) get(id string) (indexedRollout, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k, ok := x.known[id]
	return k, ok
}

// put records r as read from its chain.
func (x *rolloutIndex) put(r *stewardv1.Rollout) {
	k := indexedRollout{tenant: r.Tenant, tool: r.GetSpec().GetTool()}
	if r.State != stewardv1.RolloutState_ROLLOUT_STATE_RAMPING {
		k.ended = r
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.known[r.RolloutId] = k
}

// startedAt returns the ids listed when the last rollout.started was at
// sequence last, if those are the ones kept.
func (x *rolloutIndex) startedAt(last uint64) ([]string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.started.listed || x.started.last != last {
		return nil, false
	}
	return x.started.ids, true
}

// putStarted keeps ids, listed after the last rollout.started was at
// sequence last, unless a later listing is kept already.
func (x *rolloutIndex) putStarted(last uint64, ids []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.started.listed || last >= x.started.last {
		x.started = startedList{listed: true, last: last, ids: ids}
	}
}

// startedIDs returns, sorted, the ids of every rollout started before the
// call. Every proposal and every task's creation asks, and a listing is a
// stream info request whose answer names every rollout's subject, so the
// ids are listed again only when the last rollout.started is not the one
// the kept list saw: a rollout started since, by any control plane, is
// stored after it. That check is a lookup of the last message on one
// wildcard (the leader's answer on a replicated stream, as a listing is).
func (p *rollouts) startedIDs(ctx context.Context) ([]string, error) {
	last, err := p.log.LastOfTypes(ctx, event.TypeRolloutStarted)
	if err != nil {
		return nil, err
	}
	if ids, ok := p.index.startedAt(last); ok {
		return ids, nil
	}
	ids, err := p.log.ChainIDs(ctx, event.TypeRolloutStarted)
	if err != nil {
		return nil, err
	}
	p.index.putStarted(last, ids)
	return ids, nil
}

// tenantRollouts returns tenant's rollouts, oldest first; of tool only,
// unless tool is "". Ended ones come from the index (read-only).
func (p *rollouts) tenantRollouts(ctx context.Context, tenant, tool string) ([]*stewardv1.Rollout, error) {
	ids, err := p.startedIDs(ctx)
	if err != nil {
		return nil, err
	}
	var out []*stewardv1.Rollout
	for _, id := range ids {
		k, ok := p.index.get(id)
		switch {
		case ok && (k.tenant != tenant || tool != "" && k.tool != tool):
			continue
		case ok && k.ended != nil:
			out = append(out, k.ended)
			continue
		}
		l, err := p.loadRollout(ctx, id)
		if err != nil {
			return nil, err
		}
		p.index.put(l.r)
		if l.r.Tenant == tenant && (tool == "" || l.r.Spec.Tool == tool) {
			out = append(out, l.r)
		}
	}
	slices.SortStableFunc(out, func(a, b *stewardv1.Rollout) int { return a.StartTime.AsTime().Compare(b.StartTime.AsTime()) })
	return out, nil
}

// nextRolloutID is the id of the n-th rollout (from 0) of tool in tenant:
// derived, not drawn, so that two starts racing past the check that no
// rollout of the tool ramps write the same chain's first event, and the
// conditional append lets one of them in.
func nextRolloutID(tenant, tool string, n int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", tenant, tool, n))
	return "ro-" + hex.EncodeToString(sum[:12])
}
