package control

import (
	"context"
	"strconv"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rollout"
	"github.com/steward-run/steward/pkg/task"
)

// A candidate task's end is counted on its rollout's chain
// (rollout.task_ended), toward the step the rollout is at, and the step
// is judged right after (rollout.Judge). Both are conditional appends on
// the chain's head, whose ids derive from the rollout and the task or the
// step: a redelivered end, or two control planes seeing it, count it once
// and widen or roll back once — the chain is read for the id first, since
// the log's own dedupe is only a window. The counts are the chain's, so a
// restarted plane judges from where the last one left off.

// taskEnded counts the end of the task of rec, a task's end, on
// every RAMPING rollout that assigned it the candidate, and judges them.
func (p *rollouts) taskEnded(ctx context.Context, rec *stewardv1.EventRecord) error {
	recs, err := p.log.Read(ctx, rec.Event.TaskId)
	if err != nil || len(recs) == 0 {
		return err
	}
	var t *stewardv1.Task
	for _, a := range recs[0].Event.GetTaskCreated().GetRolloutAssignments() {
		if !a.Candidate {
			continue
		}
		if t == nil {
			if t, err = task.Fold(recs); err != nil {
				return err
			}
		}
		if err := p.countEnd(ctx, a.RolloutId, t, recs[0].Sequence); err != nil {
			return err
		}
	}
	return nil
}

// countEnd counts t's end on rollout id, then judges the rollout's step.
// Only an event stored since t was created, at sequence created, can
// count its end: those are read for the count's id, not the whole chain.
func (p *rollouts) countEnd(ctx context.Context, id string, t *stewardv1.Task, created uint64) error {
	taskID := t.GetContract().GetTaskId()
	evID := rollout.TaskEndedEventID(id, taskID)
	_, err := p.changeRollout(ctx, id, stewardPrincipal, created, func(l loadedRollout) (string, event.Payload, error) {
		if l.r.State != stewardv1.RolloutState_ROLLOUT_STATE_RAMPING || l.has(evID) {
			return "", nil, nil
		}
		// A task whose calls of the tool fell back ended on the stand-in's
		// work: the candidate failed it, whatever the task's end says.
		fell := fellBackFrom(t, l.r.Spec.GetTool())
		ended := &stewardv1.RolloutTaskEnded{TaskId: taskID, Step: l.r.Step,
			Failed:   fell || t.Status == stewardv1.TaskStatus_TASK_STATUS_FAILED,
			Accepted: !fell && t.Status == stewardv1.TaskStatus_TASK_STATUS_ACCEPTED}
		return evID, ended, nil
	})
	if err != nil {
		return err
	}
	return p.judgeRollout(ctx, id)
}

// judgeRollout widens, completes or rolls back rollout id as its current
// step's figures call for; nothing while too few candidate tasks ended.
func (p *rollouts) judgeRollout(ctx context.Context, id string) error {
	_, err := p.changeRollout(ctx, id, stewardPrincipal, 0, func(l loadedRollout) (string, event.Payload, error) {
		r := l.r
		switch verdict, reason := rollout.Judge(r); verdict {
		case rollout.RollBack:
			return event.ID(id, event.TypeRolloutRolledBack), &stewardv1.RolloutRolledBack{Reason: reason, Figures: r.Figures}, nil
		case rollout.Widen:
			return event.ID(id, event.TypeRolloutWidened, strconv.Itoa(int(r.Step)+1)), &stewardv1.RolloutWidened{Step: r.Step + 1, Figures: r.Figures}, nil
		case rollout.Complete:
			return event.ID(id, event.TypeRolloutCompleted), &stewardv1.RolloutCompleted{Figures: r.Figures}, nil
		}
		return "", nil, nil
	})
	return err
}

// fellBackFrom reports whether a declared fallback for tool engaged on t.
func fellBackFrom(t *stewardv1.Task, tool string) bool {
	for _, e := range t.FallbackEngagements {
		if f := task.FindFallback(t.Contract, e.FallbackId); f.GetKind() == toolFallback && f.GetPrimary() == tool {
			return true
		}
	}
	return false
}
