package execution

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// cuts is the rule for calls a restore may have left made
// (sentAfterCut). It reaches the plane only to record, and to price the
// calls made.
type cuts struct {
	recording
	costing
	cfg    Config
	log    *eventlog.Log
	logger *slog.Logger
}

// costing prices the calls made for an action (attemptsCost).
type costing interface {
	attemptsCost(ctx context.Context, taskID string, a *stewardv1.Action) (int64, error)
}

// sentAfterCut says why a's next call may already have been made, by the
// Steward that a restore's backup was taken from, after the backup's cut
// (Config.RestoreCut): "" when it cannot have been. Nothing in the
// restored log tells such a call: what the old Steward permitted, claimed
// or dispatched after the cut is not in it. So a call is taken to be
// possibly made when the action was proposed at or before the cut (it is
// in the task's fold at the cut) and nothing has been learnt of its calls
// since: its outcome is as the cut left it. Once the restored Steward has
// recorded one (a lost call's unknown, this rule's own, a settlement from
// the tool), what it decides next rests on that, as always.
//
// A read is sent again, as a lost one is (resendLostRead); a model's call
// is paid, and is not.
func (p *cuts) sentAfterCut(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action) (string, error) {
	cut := p.cfg.RestoreCut
	if cut == nil || t.CreatedSequence > cut.Sequence {
		return "", nil // never restored, or a task created since
	}
	entry, err := p.cfg.Tools.Lookup(ctx, p.log, t.Tenant, a.Tool, a.ToolVersion)
	if errs.Is(err, errs.NotFound) {
		return "", nil // refused before dispatch (prepare), with nothing sent
	} else if err != nil {
		return "", err
	}
	if tool := entry.Tool.Contract; tool.GetEffectClass() == stewardv1.EffectClass_EFFECT_CLASS_READ && !isModel(tool) {
		return "", nil
	}
	// The task as the cut left it: its events up to the cut, and no more
	// read.
	atCut, past := &stewardv1.Task{}, errors.New("past the cut")
	err = p.log.EachAfter(ctx, t.Contract.GetTaskId(), 0, func(r *stewardv1.EventRecord) error {
		if r.Sequence > cut.Sequence {
			return past
		}
		if err := task.Apply(atCut, r.Event, r.Sequence); err != nil {
			return errs.Wrap(errs.Corrupt, err, "task %s up to the restore's cut", t.Contract.GetTaskId())
		}
		return nil
	})
	if err != nil && !errors.Is(err, past) {
		return "", err
	}
	was := task.FindAction(atCut, a.ActionId)
	if was == nil || !proto.Equal(was.GetOutcome(), a.GetOutcome()) || was.GetSettledBy() != a.GetSettledBy() {
		return "", nil // proposed after the cut, or an outcome learnt since
	}
	return fmt.Sprintf("not sent: Steward was restored from a backup that ends at event %d (%s), this action was proposed before that and has no outcome since, "+
		"so the Steward the backup was taken from may have sent attempt %d after it; the status query or a person settles it",
		cut.Sequence, cut.Time.UTC().Format(time.RFC3339), a.Attempt+1), nil
}

// unknownAfterCut records d's outcome as unknown instead of making its
// call (see sentAfterCut), as a lost call's is (lostCall): reconciliation
// then settles it, and a tool that says it never took the request gets
// it once more, with the same op_key. Only while the dispatch is still
// this worker's, as the append left it.
func (p *cuts) unknownAfterCut(ctx context.Context, d *inFlight) error {
	a := proto.CloneOf(d.a) // the loaded task's, shared with the fold: never changed in place
	a.Attempt = d.attempt
	p.logger.Warn("action not sent: it may have been sent after the restored backup's cut; its outcome is unknown until settled",
		"task", d.taskID, "action", a.ActionId, "attempt", a.Attempt)
	ours := func(t *stewardv1.Task) bool {
		cur := task.FindAction(t, a.ActionId)
		return cur.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED && cur.GetAttempt() == a.Attempt && cur.GetClaimedBy() == p.cfg.Worker
	}
	cost, err := p.attemptsCost(ctx, d.taskID, a)
	if err != nil {
		return err
	}
	return p.recordIf(ctx, d.taskID, event.ID(a.ActionId, event.TypeActionOutcome, fmt.Sprint(a.Attempt), "restore"), d.c,
		unknownOutcome(a, d.cut, cost, p.cfg.Now()), ours)
}
