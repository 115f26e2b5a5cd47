package control

import (
	"context"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// carry copies the content a fork carries from its parent (state, as
// task.ForkState makes it) that the parent stores under its own keys to
// the fork's (task.OwnRef says where the fork reads it): archiving the
// parent purges the parent's keys, and the fork may live on. It runs
// before the fork's TaskCreated is appended; a retry copies again, which
// stores nothing new.
func (dg *delegation) carry(ctx context.Context, parentID, forkID string, state *stewardv1.Task) error {
	copyRef := func(s *action.Store, ref, hash string) error {
		if ref == "" || task.OwnRef(ref, parentID, forkID) == ref {
			return nil // inline, elsewhere, or shared by every task
		}
		if s == nil {
			return errs.New(errs.FailedPrecondition, "this control plane has no store to copy %s of task %s to its fork from", ref, parentID)
		}
		return s.CopyTo(ctx, ref, hash, forkID)
	}
	for _, a := range state.Actions {
		if err := copyRef(dg.requests, a.RequestRef, a.RequestHash); err != nil {
			return err
		}
		if o := a.Outcome; o != nil {
			if err := copyRef(dg.results, o.ResultRef, o.ResultHash); err != nil {
				return err
			}
		}
	}
	for _, a := range state.Artifacts {
		if err := copyRef(dg.results, a.Uri, a.Sha256); err != nil {
			return err
		}
	}
	return nil
}
