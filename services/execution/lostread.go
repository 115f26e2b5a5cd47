package execution

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// resendLostRead takes up a lost call (see lostCall) of a read the way a
// transient failure that arrived is taken up: a read has no side effect,
// so the retry rules let it be sent again blind (docs/retries.md), and an
// unknown outcome would only wait for a person to settle what asking
// again answers. It records the wait before the next attempt, with the
// same op_key, under the action's retry policy, while silent holds of the
// task; the wait's timer then makes the attempt, with a new permit
// (docs/permits.md). It reports false, recording nothing, for any other
// tool, and for a read with no attempt left under its policy: that call's
// outcome stays unknown, as before.
func (p *Plane) resendLostRead(ctx context.Context, taskID string, a *stewardv1.Action, c cause, reason string, silent func(*stewardv1.Task) bool) (bool, error) {
	tenant, err := p.tasks.Tenant(ctx, taskID)
	if err != nil {
		return false, err
	}
	entry, err := p.cfg.Tools.Lookup(ctx, p.log, tenant, a.Tool, a.ToolVersion)
	if errs.Is(err, errs.NotFound) {
		return false, nil // no contract to read its effect class from
	} else if err != nil {
		return false, err
	}
	tool := entry.Tool.Contract
	if tool.GetEffectClass() != stewardv1.EffectClass_EFFECT_CLASS_READ || isModel(tool) {
		return false, nil // a model's call is a read that is paid: never sent twice
	}
	next := a.Attempt + 1
	policy := retryPolicyOf(a, tool)
	d, ok := policy.next(next, firstUse(a), p.now())
	if !ok {
		return false, nil
	}
	until := p.now().Add(d)
	why := fmt.Sprintf("attempt %d of %d of a read was lost: %s; a read is sent again", a.Attempt, policy.MaxAttempts, reason)
	// The id says which lost attempt this is for, not when: workers taking
	// over at once compute the same one, and the task's sequence lets one in.
	return true, p.recordIf(ctx, taskID, event.ID(a.ActionId, event.TypeActionWaiting, fmt.Sprint(next), "lost"), c,
		&stewardv1.ActionWaiting{ActionId: a.ActionId, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: timestamppb.New(until), NextAttempt: next, Reason: why}, silent)
}
