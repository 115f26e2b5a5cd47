package control

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolpin"
	"github.com/steward-run/steward/pkg/toolreg"
)

// toolFor returns the version of tool name a proposal on t gets, version
// being the one it names ("" for none), among the tools t's tenant sees
// (its own, and the global ones; another tenant's is not registered):
//
//   - a tool the contract pins gets its pin, and naming another version is
//     refused;
//   - otherwise a proposal that names no version gets the latest registered
//     before the task was created, unless a rollout of the tool says
//     otherwise (docs/rollouts.md), and one that names a version registered
//     after it is refused.
//
// So nobody — an agent allowed to register tools least of all — can change
// what a running task's tools are: a new version that calls itself READ,
// and so would skip approval, is not the task's unless its contract pins
// it. Errors name the field of a ProposeActionRequest that is wrong. A
// tool the contract does not allow is only looked up: record refuses it,
// naming the tool, which says more than its version would.
//
// It returns too the rollout that chose the version ("" when none did):
// from one resolution, so that an action records the rollout of the
// version it takes, never one read a moment later.
func (p *Plane) toolFor(ctx context.Context, t *stewardv1.Task, name, version string) (*toolreg.Entry, string, error) {
	taskID := t.GetContract().GetTaskId()
	pin, allowed := toolpin.Find(t.GetContract().GetAllowedTools(), name)
	switch {
	case !allowed:
		return noRollout(found(p.tools.Lookup(ctx, p.log, t.Tenant, name, version)))
	case pin != "" && version != "" && version != pin:
		return nil, "", errs.Field("tool_version", "%s is not the version of tool %s that task %s pins (%s)", errs.Quote(version), errs.Quote(name), taskID, errs.Quote(pin))
	case pin != "":
		// The contract names the version: its requester chose it, whenever
		// it was registered.
		return noRollout(found(p.tools.Lookup(ctx, p.log, t.Tenant, name, pin)))
	case version == "":
		e, err := found(p.tools.LookupAsOf(ctx, p.log, t.Tenant, name, t.GetCreatedSequence()))
		if err != nil {
			return nil, "", err
		}
		return p.rollouts.rolloutEntry(ctx, t, name, e) // rollout_resolve.go
	}
	e, err := found(p.tools.Lookup(ctx, p.log, t.Tenant, name, version))
	if err != nil {
		return nil, "", err
	}
	if e.Tool.Sequence > t.GetCreatedSequence() {
		return nil, "", errs.Field("tool_version", "%s of tool %s was registered after task %s was created; a task takes only the versions registered before it, unless its contract pins one", errs.Quote(version), errs.Quote(name), taskID)
	}
	return e, "", nil
}

// noRollout is a version no rollout chose.
func noRollout(e *toolreg.Entry, err error) (*toolreg.Entry, string, error) { return e, "", err }

// found turns a registry's NotFound into an error naming the tool field.
func found(e *toolreg.Entry, err error) (*toolreg.Entry, error) {
	if errs.Is(err, errs.NotFound) {
		return nil, errs.Field("tool", "%s", err.Error())
	}
	return e, err
}
