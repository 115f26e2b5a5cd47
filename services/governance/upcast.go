package governance

import stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"

// This file is the one place where the governance plane reads what earlier
// builds wrote (docs/compatibility.md): a task lives across upgrades.
// Every rule here is for a shape that cannot be made today's, so each is a
// named function the plane calls; no record is rewritten on read. One rule
// has no branch of its own:
//
//   - An approval decision recorded before decisions were signed (7972f44,
//     2026-12-01) is unsigned, so it fails credential.VerifyDecision as
//     one appended by another hand does: no permit follows it
//     (afterDecision), and an approval holding it leads to nothing
//     (votesHold).

// missingCredential reports whether t holds no credential, which governance
// issues now, when an action or a renewal needs it: a task created before
// credentials existed (3cb7138, 2026-11-29) has none, as has one whose
// issuing reaction was missed.
func missingCredential(t *stewardv1.Task) bool { return t.Credential == nil }

// unsignedFromBefore reports whether s, the signature of a snapshot or an
// approval request governance is about to act on, is missing: one
// recorded before snapshots and approval requests were signed (55ae104,
// 2026-12-05) has none, and is taken as before, so that tasks in flight
// across the upgrade go on. The checks that stood alone before stand for
// every one still — a snapshot is weighed against a fresh evaluation
// (checkRecorded), an approval's terms against those governance would
// show (termsHold) — so a forger gains nothing by leaving a signature
// off; a signature present must hold.
func unsignedFromBefore(s *stewardv1.SignedEvent) bool { return s == nil }
