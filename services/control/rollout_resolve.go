package control

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rollout"
	"github.com/steward-run/steward/pkg/toolpin"
	"github.com/steward-run/steward/pkg/toolreg"
)

// assignRollouts is what the RAMPING rollouts of tenant assign task
// taskID, whose contract is c, at its creation: one assignment per
// rollout of a tool c allows without pinning its version (a pin is the
// requester's choice and wins). Recorded on TaskCreated, it is never
// recomputed: replay reads it.
func (p *rollouts) assignRollouts(ctx context.Context, tenant, taskID string, c *stewardv1.TaskContract) ([]*stewardv1.RolloutAssignment, error) {
	rs, err := p.tenantRollouts(ctx, tenant, "")
	if err != nil {
		return nil, err
	}
	var out []*stewardv1.RolloutAssignment
	for _, r := range rs {
		pin, allowed := toolpin.Find(c.GetAllowedTools(), r.Spec.Tool)
		if r.State == stewardv1.RolloutState_ROLLOUT_STATE_RAMPING && allowed && pin == "" {
			out = append(out, rollout.Assign(r, taskID))
		}
	}
	return out, nil
}

// rolloutEntry is the version of tool name that t takes under the
// rollouts of its tenant, given def, the one it takes without them (the
// latest registered before its creation), and the rollout that chose it:
// def and "" when none changes it. See rollout.Version: a task a rollout
// assigned takes its assignment while the rollout ramps, the stable
// version once it rolled back (a running task too, from its next
// proposal), the candidate once it completed; the latest ended rollout of
// the tool turns an unassigned task's default the same way.
func (p *rollouts) rolloutEntry(ctx context.Context, t *stewardv1.Task, name string, def *toolreg.Entry) (*toolreg.Entry, string, error) {
	rs, err := p.tenantRollouts(ctx, t.Tenant, name)
	if err != nil {
		return nil, "", err
	}
	for i := len(rs) - 1; i >= 0; i-- { // the latest first
		r := rs[i]
		var assigned *stewardv1.RolloutAssignment
		for _, a := range t.GetRolloutAssignments() {
			if a.RolloutId == r.RolloutId {
				assigned = a
			}
		}
		if assigned == nil && r.State == stewardv1.RolloutState_ROLLOUT_STATE_RAMPING {
			continue // a task created before it started keeps its default
		}
		v := rollout.Version(r, assigned, def.Tool.Contract.Version)
		switch v {
		case "":
			return def, "", nil
		case def.Tool.Contract.Version:
			return def, r.RolloutId, nil
		}
		e, err := p.tools.Lookup(ctx, p.log, t.Tenant, name, v)
		if errs.Is(err, errs.NotFound) {
			err = errs.Field("tool", "%s", err.Error())
		}
		return e, r.RolloutId, err
	}
	return def, "", nil
}
