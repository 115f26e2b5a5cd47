package state

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// maxSnapshotLimit bounds ListPolicySnapshotsRequest.limit.
const maxSnapshotLimit = 1_000_000

// ListPolicySnapshots streams the snapshots of the caller's tenant's
// tasks evaluated in the range, task by task in creation order, each
// with its recorded input the first time that input comes in the task: what a policy
// canary re-evaluates (docs/policy-canary.md). It only reads, the log and
// the policy store, and never loads a bundle: the candidate is judged
// where it is reviewed.
func (s *auditService) ListPolicySnapshots(ctx context.Context, req *connect.Request[stewardv1.ListPolicySnapshotsRequest], stream *connect.ServerStream[stewardv1.ListPolicySnapshotsResponse]) error {
	m := req.Msg
	since, until, err := snapshotRange(m)
	if err != nil {
		return err
	}
	who := rpc.Caller(ctx)
	if m.Tenant != "" && m.Tenant != who.Tenant {
		return errs.New(errs.NotFound, "tenant %s not found", errs.Quote(m.Tenant))
	}
	if m.Limit > maxSnapshotLimit {
		return errs.Field("limit", "%d is past the most, %d", m.Limit, maxSnapshotLimit)
	}
	wctx, cancel := context.WithTimeout(ctx, freshnessWait)
	defer cancel()
	if err := eventlog.CatchUp(wctx, s.plane.views, s.plane.log.LastTaskSequence); err != nil {
		return err
	}
	l := &snapshotLister{s: s, stream: stream, since: since, until: until, left: int(m.Limit), sent: map[string]bool{}}
	for _, id := range s.plane.views.TaskIDs(who.Tenant, since) {
		if err := l.task(ctx, id, who.Tenant); err != nil || l.done() {
			return err
		}
	}
	return nil
}

// snapshotRange reads since and until; unset is open.
func snapshotRange(m *stewardv1.ListPolicySnapshotsRequest) (since, until time.Time, err error) {
	if m.Since != nil {
		if err := m.Since.CheckValid(); err != nil {
			return since, until, errs.Field("since", "%v", err)
		}
		since = m.Since.AsTime()
	}
	if m.Until != nil {
		if err := m.Until.CheckValid(); err != nil {
			return since, until, errs.Field("until", "%v", err)
		}
		if until = m.Until.AsTime(); until.Before(since) {
			return since, until, errs.Field("until", "is before since")
		}
	}
	return since, until, nil
}

// snapshotLister sends one stream's snapshots.
type snapshotLister struct {
	s            *auditService
	stream       *connect.ServerStream[stewardv1.ListPolicySnapshotsResponse]
	since, until time.Time
	left         int             // snapshots still to send; 0 with no limit
	limited      bool            // set once a limit was given and reached
	sent         map[string]bool // input hashes whose bytes went out in this task
}

func (l *snapshotLister) done() bool { return l.limited }

// task sends the snapshots of one task's events in the range.
func (l *snapshotLister) task(ctx context.Context, taskID, tenant string) error {
	actions := map[string]string{} // action id → tool
	clear(l.sent)                  // inputs are the task's own (its facts are in them): a client keeps one task's at a time
	return l.s.plane.log.EachRaw(ctx, taskID, func(raw eventlog.Raw) error {
		ev, err := event.Open(raw.Data)
		if err != nil {
			return errs.Wrap(errs.Corrupt, err, "task %s at sequence %d", taskID, raw.Sequence)
		}
		if p := ev.GetActionProposed(); p != nil {
			actions[p.GetAction().GetActionId()] = p.GetAction().GetTool()
		}
		rec := recordedSnapshot(ev)
		if rec == nil || !l.inRange(rec.Snapshot) || l.limited {
			return nil
		}
		rec.TaskId, rec.Tenant, rec.Sequence, rec.Tool = taskID, tenant, raw.Sequence, actions[rec.ActionId]
		if err := l.withInput(ctx, rec); err != nil {
			return err
		}
		if err := l.stream.Send(&stewardv1.ListPolicySnapshotsResponse{Snapshot: rec}); err != nil {
			return err
		}
		if l.left > 0 {
			l.left--
			l.limited = l.left == 0
		}
		return nil
	})
}

func (l *snapshotLister) inRange(s *stewardv1.PolicySnapshot) bool {
	at := s.GetEvaluatedAt().AsTime()
	return !at.Before(l.since) && (l.until.IsZero() || at.Before(l.until))
}

// withInput adds rec's kept input, the first time its hash comes.
func (l *snapshotLister) withInput(ctx context.Context, rec *stewardv1.RecordedSnapshot) error {
	h := rec.Snapshot.GetInputHash()
	store := l.s.plane.cfg.Policy
	if !rec.Snapshot.GetInputKept() || store == nil || l.sent[h] || rec.Kind == stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_CONTRACT_REVISION {
		return nil
	}
	data, ok, err := store.Input(ctx, rec.TaskId, h)
	if err != nil {
		return err
	}
	if ok {
		rec.Input, l.sent[h] = data, true
	}
	return nil
}

// recordedSnapshot is the snapshot ev carries, with what it judged, or
// nil.
func recordedSnapshot(ev *stewardv1.Event) *stewardv1.RecordedSnapshot {
	switch {
	case ev.GetPolicyEvaluated() != nil:
		pe := ev.GetPolicyEvaluated()
		return &stewardv1.RecordedSnapshot{Kind: stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_ACTION, ActionId: pe.ActionId, Snapshot: pe.Snapshot}
	case ev.GetActionPermitted().GetSnapshot() != nil:
		pm := ev.GetActionPermitted()
		return &stewardv1.RecordedSnapshot{Kind: stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_ACTION, ActionId: pm.GetPermit().GetActionId(), Snapshot: pm.Snapshot}
	case ev.GetPlanEvaluated().GetSnapshot() != nil:
		pe := ev.GetPlanEvaluated()
		return &stewardv1.RecordedSnapshot{Kind: stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_PLAN, PlanVersion: pe.Version, Snapshot: pe.Snapshot}
	case ev.GetContractRevisionEvaluated().GetSnapshot() != nil:
		re := ev.GetContractRevisionEvaluated()
		return &stewardv1.RecordedSnapshot{Kind: stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_CONTRACT_REVISION, RevisionId: re.RevisionId, Snapshot: re.Snapshot}
	}
	return nil
}

// planeSkew is how far one plane's clock may run ahead of another's: a
// snapshot is stamped by governance's, the task's last change by
// whichever plane wrote it, so a task last changed a little before since
// may still hold a snapshot stamped after it.
const planeSkew = time.Hour

// TaskIDs returns the ids of tenant's tasks, in creation order, last
// changed at or after since less planeSkew (all for the zero time): those
// that may hold a snapshot evaluated since then.
func (p *Projection) TaskIDs(tenant string, since time.Time) []string {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []string
	for _, v := range p.byTenant[tenant] {
		if v != nil && (since.IsZero() || !v.task.GetUpdatedAt().AsTime().Before(since.Add(-planeSkew))) {
			out = append(out, v.task.Contract.GetTaskId())
		}
	}
	return out
}
