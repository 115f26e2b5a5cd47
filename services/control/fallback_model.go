package control

import (
	"context"
	"slices"
	"strconv"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// steerModel engages or clears a declared model fallback after decision id
// is recorded on taskID: Steward does not call the agent's models, so the
// agent's decisions are what shows the switch (docs/fallbacks.md). A
// decision by the fallback after one by the primary engages it; a decision
// by the primary clears it. Decided on the task each try reads, under an
// id naming the decision, so that a repeat appends nothing.
func (ds *decisions) steerModel(ctx context.Context, taskID, decisionID string) error {
	_, err := ds.apply(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		d := task.FindDecision(t, decisionID)
		if d == nil || task.Terminal(t.Status) || !latestModelDecision(t, decisionID) {
			return nil, nil // a repeat of an older decision is stale evidence
		}
		model := d.GetCall().GetModelId()
		prev := task.PreviousModelDecision(t, decisionID).GetCall().GetModelId()
		for _, f := range t.Contract.GetFallbacks() {
			if f.Kind != modelFallback {
				continue
			}
			evidence := &stewardv1.FallbackEvidence{Trigger: "reported", DecisionId: decisionID}
			meta := event.Meta{TaskID: taskID, Actor: ds.actor(stewardPrincipal), CausationID: decisionID}
			n := strconv.Itoa(len(t.FallbackEngagements))
			engaged := task.Engaged(t, f.Id) != nil
			switch {
			case !engaged && model == f.Fallback && prev == f.Primary:
				meta.ID = event.ID(taskID, event.TypeFallbackEngaged, f.Id, decisionID, n)
				return ds.event(meta, &stewardv1.FallbackEngaged{FallbackId: f.Id, Evidence: evidence})
			case engaged && model == f.Primary:
				meta.ID = event.ID(taskID, event.TypeFallbackCleared, f.Id, decisionID, n)
				return ds.event(meta, &stewardv1.FallbackCleared{FallbackId: f.Id, Evidence: evidence})
			}
		}
		return nil, nil
	})
	return err
}

// latestModelDecision reports whether id is the latest decision on t that
// names a model: only it says which model the agent is on now.
func latestModelDecision(t *stewardv1.Task, id string) bool {
	for _, d := range slices.Backward(t.Decisions) {
		if d.GetCall().GetModelId() != "" {
			return d.DecisionId == id
		}
	}
	return false
}
