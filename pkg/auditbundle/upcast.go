package auditbundle

// Rules for bundles of logs an earlier build wrote (docs/compatibility.md).

// inputNotKept is the rule for a snapshot recorded before governance kept
// policy inputs (issue 33, part 4): it does not say input_kept, and its
// input_hash names an input no store holds, so its bundle has none. It is
// said plainly and not re-evaluated; the chain, the signature and
// everything else about it still count. One that says input_kept is held
// to its input and sources (keptInput).
func inputNotKept(r *Report, s snapshotAt) {
	r.note("%s: snapshot %s has no recorded input (recorded before Steward kept policy inputs): not re-evaluated", s.item, s.snap.SnapshotId)
}

// snapshotNotSigned is the rule for a snapshot carried by a permit signed
// before permits named their snapshot's hash (audit.UnboundSnapshot): no
// signature covers it, so what it says is the chain's word alone. Said
// plainly; it is re-evaluated as any other.
func snapshotNotSigned(r *Report, s snapshotAt) {
	r.note("%s: snapshot %s came with a permit that does not name its hash (signed before permits did): no signature covers it", s.item, s.snap.SnapshotId)
}

// revisionNotReevaluated is the rule for governance's judgement of a
// contract revision (ContractRevisionEvaluated): governance does not keep
// its input yet (docs/revisions.md), so it is counted and said plainly,
// not re-evaluated; the fold still holds the revision's approvals to it.
func revisionNotReevaluated(r *Report, s snapshotAt) {
	r.note("%s: snapshot %s of contract revision %s: a revision's policy input is not kept yet: not re-evaluated", s.item, s.snap.SnapshotId, s.revision)
}
