package auditbundle

// Rules for bundles of logs an earlier build wrote (docs/compatibility.md).

// inputNotKept is the rule for a snapshot recorded before governance kept
// policy inputs (issue 33, part 4): its input_hash names an input no store
// holds, so its bundle has none. It is said plainly and not re-evaluated;
// the chain, the signature and everything else about it still count.
func inputNotKept(r *Report, s snapshotAt) {
	r.note("%s: snapshot %s has no recorded input (recorded before Steward kept policy inputs, or left out of the export): not re-evaluated", s.item, s.snap.SnapshotId)
}
