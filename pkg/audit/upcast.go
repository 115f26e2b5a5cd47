package audit

import stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"

// Rules for logs an earlier build wrote (docs/compatibility.md).

// UnboundSnapshot is the rule for a permit signed before permits named
// the hash of the snapshot they were decided under (issue 33, part 4):
// its signature covers the snapshot's id alone, so the snapshot carried
// beside it (ActionPermitted.snapshot) is the chain's word, not
// governance's signed one. Such a permit still holds; the replay does not
// check its snapshot against it, and an audit bundle says so in a note.
// A permit signed since always names the hash, and its signature covers
// it: one cannot be made to look like the other.
func UnboundSnapshot(p *stewardv1.ActionPermit) bool {
	return p.GetSnapshotHash() == ""
}
