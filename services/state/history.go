package state

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// history reads the events of a task the hot views do not hold whole —
// evicted (evict.go), or gone from them (dropArchived, a restart) — where
// they are: the log (ColdTasks), then the archive (fromArchive: its
// tenant and NotFound rules). It is the one path for such reads: the
// fold of an evicted view, a receipt, GetTask of a task the log lacks.
// a is the task as the archive holds it, nil when the log served it.
func (p *Plane) history(ctx context.Context, taskID string) (recs []*stewardv1.EventRecord, a *archivedTask, err error) {
	who := rpc.Caller(ctx)
	recs, err = p.cold.Events(ctx, who.Tenant, taskID)
	if err != nil || len(recs) > 0 {
		return recs, nil, err
	}
	if a, err = p.fromArchive(ctx, who, taskID); err != nil {
		return nil, nil, err
	}
	return a.recs, a, nil
}
