package governance

import (
	"bytes"
	"context"
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// judgeRevision reacts to a proposed revision of a task's contract
// (docs/revisions.md): it evaluates the bundle's revision query into a
// snapshot and records it (ContractRevisionEvaluated), which lets the
// accountable owner's approval take effect, asks a role's holder to
// approve too, or rejects the revision. A revision no longer open (decided
// or rejected before policy judged it, its task ended) is not judged.
// Idempotent: the event's id derives from the revision and its hash, and
// the write goes ahead only while the revision is open and unjudged.
func (p *Plane) judgeRevision(ctx context.Context, rec *stewardv1.EventRecord, rp *stewardv1.ContractRevisionProposed) error {
	taskID := rec.Event.TaskId
	t, _, err := p.tasks.LoadSince(ctx, taskID, rec.Sequence)
	if err != nil {
		return err
	}
	unjudged := func(t *stewardv1.Task) bool {
		r := task.OpenRevision(t)
		return r != nil && r.RevisionId == rp.RevisionId && r.ContractHash == rp.ContractHash && r.Snapshot == nil && !task.Terminal(t.Status)
	}
	if !unjudged(t) {
		return nil
	}
	snap, err := p.revisionSnapshot(ctx, t, task.OpenRevision(t))
	if err != nil {
		return err
	}
	_, err = p.tasks.UpdateFrom(ctx, t, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if !unjudged(t) {
			return nil, nil
		}
		id := event.ID(taskID, "contract-revision", rp.RevisionId, rp.ContractHash, event.TypeContractRevisionEvaluated)
		return event.New(p.meta(taskID, id, rec.Event), &stewardv1.ContractRevisionEvaluated{
			RevisionId: rp.RevisionId, ContractHash: rp.ContractHash, Snapshot: snap,
		})
	})
	return err
}

// revisionSnapshot evaluates the revision query for r, t's open revision.
// A Rego error is returned (the reaction retries); an undefined result is
// a deny, in the engine. The input is not kept for auditors (input_kept
// is false): an audit bundle re-derives the snapshots of actions and
// plans, not yet of revisions.
func (p *Plane) revisionSnapshot(ctx context.Context, t *stewardv1.Task, r *stewardv1.ContractRevision) (*stewardv1.PolicySnapshot, error) {
	input, rec, err := revisionInput(t, r)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "revision policy input for %s", r.RevisionId)
	}
	res, err := p.engine.EvaluateRevision(ctx, input)
	if p.evaluated != nil {
		p.evaluated()
	}
	if err != nil {
		return nil, fmt.Errorf("evaluate revision policy for %s: %w", r.RevisionId, err)
	}
	id := "rsnap-" + event.ID(t.Contract.GetTaskId(), "contract-revision", r.RevisionId, r.ContractHash)[:24]
	return p.snapshotOf(id, res, rec.hash, false, t.Contract.GetRiskTier()), nil
}

// revisionInput is the document the revision query judges: the contract
// in force (task), the revised one (contract), the revision itself and
// the contract's risk tier.
func revisionInput(t *stewardv1.Task, r *stewardv1.ContractRevision) (map[string]any, inputRecord, error) {
	taskFacts, err := protoFacts(t.Contract.ProtoReflect())
	if err != nil {
		return nil, inputRecord{}, err
	}
	taskFacts["status"] = t.Status.String()
	contractFacts, err := protoFacts(r.Contract.ProtoReflect())
	if err != nil {
		return nil, inputRecord{}, err
	}
	changed := make([]any, 0, len(r.Changed))
	for _, c := range r.Changed {
		changed = append(changed, c)
	}
	revision := map[string]any{
		"revision_id": r.RevisionId, "version": number(int(r.Version)), "hash": r.ContractHash, "changed": changed,
		"proposed_by": validUTF8(r.ProposedBy), "proposed_by_owner": r.ProposedBy == t.Contract.GetAccountableOwnerRef(),
		"reason": validUTF8(r.Reason),
	}
	risk := map[string]any{"contract_risk_tier": t.Contract.GetRiskTier().String()}
	input := map[string]any{"task": taskFacts, "contract": contractFacts, "revision": revision, "risk": risk}
	rec, err := canonicalInput(new(bytes.Buffer), []member{
		{key: "contract", value: contractFacts},
		{key: "revision", value: revision},
		{key: "risk", value: risk},
		{key: "task", value: taskFacts},
	})
	if err != nil {
		return nil, inputRecord{}, err
	}
	return input, rec, nil
}
