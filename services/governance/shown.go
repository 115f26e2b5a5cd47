package governance

import (
	"context"

	"github.com/steward-run/steward/pkg/content"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// shown returns the approvals who may see, as they may see them
// (ListApprovals, GetApproval). It keeps the approvals on tasks of who's
// tenant: a caller sees no other tenant's approvals (docs/tenants.md). An
// approval shows its action's parameters — which may quote a result: a
// compensation's do, a plan step's may be computed from one — and its
// action hash only to who may read the task's content (the rule of
// pkg/content, as the state plane applies it: the task's parties, those
// of the tasks it was delegated from, operators and auditors) or may
// decide it (holds a role it asks for); anyone else gets them blanked and
// keyed (content.Blind). Tasks are read from the fold this process keeps.
func (p *Plane) shown(ctx context.Context, who rpc.Identity, approvals []*stewardv1.Approval) ([]*stewardv1.Approval, error) {
	out := approvals[:0]
	for _, ap := range approvals {
		var tenant string
		var self content.Parties
		err := p.tasks.Peek(ctx, ap.TaskId, 0, func(t *stewardv1.Task) { tenant, self = t.Tenant, content.PartiesOf(t) })
		switch {
		case errs.Is(err, errs.Unavailable) || ctx.Err() != nil:
			return nil, err
		case err != nil:
			// A task whose history does not fold shows no one its
			// approvals: whose it is cannot be told.
			p.logger.WarnContext(ctx, "approval of a task that does not fold", "approval_id", ap.ApprovalId, "task_id", ap.TaskId, "err", err)
		case tenant == who.Tenant:
			if !content.Reads(who, self, content.Ancestors(ctx, p.tasks)) {
				(&content.Blind{Digest: p.digest, Roles: who.Roles}).Approval(ap)
			}
			out = append(out, ap)
		}
	}
	return out, nil
}
