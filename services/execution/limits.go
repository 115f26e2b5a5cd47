package execution

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/breaker"
	"github.com/steward-run/steward/services/execution/limit"
)

// A tool's contract may limit how hard it is driven (ToolLimits): a cap
// on its calls in flight and a rate, held over every worker by the gate
// (Config.Limits), and its breaker's thresholds. A call the gate holds
// back is not dispatched: the action waits, on the log (ActionWaiting,
// WAIT_KIND_LIMIT), and the durable timer its wait sets asks again — the
// rate's own time, or for a full cap a backoff from the gate's Busy,
// doubling to limitWaitMax. The event that brought the call is answered,
// so no held call keeps a consumer's acknowledgement pending (a thousand
// of them would stop the plane). Nothing is dropped: the one dispatch
// the log lets in per attempt is made once a slot is free, after a
// restart too.

// limitWaitMax bounds the backoff of a call held back by a full cap: the
// longest it waits after a slot frees, and what a long wait writes to the
// log (one ActionWaiting each time it asks again).
const limitWaitMax = 10 * time.Second

// limitKey is what a call of tool counts against in the gate: the tool's
// name, a tenant's tool's under its tenant ("=<tenant>.<name>", as a
// breaker's key), and a global tool's with per_tenant under the calling
// task's tenant as well ("<name>.=<tenant>", "<name>.=" for the default
// tenant), so that each tenant has the limits to itself.
func limitKey(toolTenant, taskTenant string, tool *stewardv1.ToolContract) string {
	switch {
	case toolTenant != "":
		return eventlog.TenantToken(toolTenant) + "." + tool.GetName()
	case tool.GetLimits().GetPerTenant() && taskTenant != "":
		return tool.GetName() + "." + eventlog.TenantToken(taskTenant)
	case tool.GetLimits().GetPerTenant():
		return tool.GetName() + ".="
	}
	return tool.GetName()
}

// toolLimits are tool's cap and rate as the gate takes them.
func toolLimits(tool *stewardv1.ToolContract) limit.Limits {
	l := tool.GetLimits()
	return limit.Limits{MaxConcurrent: int(l.GetMaxConcurrent()), Rate: l.GetRatePerSecond(), Burst: int(l.GetBurst())}
}

// breakerConfig is the breaker tool's calls count against, as its
// contract tunes it; zero fields are the plane's (Config.Breaker).
func breakerConfig(tool *stewardv1.ToolContract) breaker.Config {
	l := tool.GetLimits()
	return breaker.Config{MinRequests: int(l.GetBreakerMinRequests()), FailureRate: l.GetBreakerFailureRate(), CoolDown: l.GetBreakerCoolDown().AsDuration()}
}

// allowBreaker asks the breaker of key whether tool may be called now,
// with the thresholds of tool's contract. A tool that shares its service
// key with others sets the thresholds for the calls it makes: tools of
// one service should agree.
func (lm *limits) allowBreaker(key string, tool *stewardv1.ToolContract) (bool, time.Time, *breaker.Transition) {
	if err := lm.breakers.Tune(key, breakerConfig(tool)); err != nil {
		lm.logger.Warn("the tool's breaker thresholds do not hold; the plane's are used", "tool", tool.GetName(), "err", err)
	}
	return lm.breakers.Allow(key, lm.now())
}

// slotHolder names one attempt's slot: the action, the attempt and this
// worker, so that a slot one worker gives back is never another's.
func (lm *limits) slotHolder(actionID string, attempt uint32) string {
	return fmt.Sprintf("%s/%d/%s", actionID, attempt, lm.cfg.Worker)
}

// slotLease is how long a slot outlives its holder's last renewal: two
// leases, so that a missed renewal does not lose a live call's slot, and
// a worker that died mid-call gives its slots back about when its claims
// are taken over.
func (lm *limits) slotLease() time.Duration { return 2 * lm.cfg.Lease }

// peekSlot asks the gate, with one read and taking nothing, whether a
// call of action a's tool at attempt would be held back, so that a held
// call costs no preparation; see takeSlot.
func (lm *limits) peekSlot(ctx context.Context, tenant string, a *stewardv1.Action, attempt uint32) (wait time.Duration, full bool, err error) {
	entry, err := lm.cfg.Tools.Lookup(ctx, lm.log, tenant, a.Tool, a.ToolVersion)
	if err != nil {
		return 0, false, nil // prepare refuses it, or fails as this would
	}
	tool := entry.Tool.Contract
	l := toolLimits(tool)
	if l.None() {
		return 0, false, nil
	}
	if lm.cfg.Limits == nil {
		return lm.noGate(tool, a.ActionId), true, nil
	}
	return lm.cfg.Limits.Peek(ctx, limitKey(entry.Tool.Tenant, tenant, tool), lm.slotHolder(a.ActionId, attempt), l, lm.now())
}

// takeSlot takes a slot for attempt of the action under its tool's
// limits, or answers how long to wait.
func (lm *limits) takeSlot(ctx context.Context, call *prepared, actionID string, attempt uint32) (time.Duration, error) {
	l := toolLimits(call.Tool)
	if l.None() {
		return 0, nil
	}
	if lm.cfg.Limits == nil {
		return lm.noGate(call.Tool, actionID), nil
	}
	return lm.cfg.Limits.Take(ctx, call.limit, lm.slotHolder(actionID, attempt), l, lm.slotLease(), lm.now())
}

// noGate is the wait of a call of a tool with limits on a plane without
// the gate (Config.Limits), which cannot hold the limits and must not
// break them: the call waits for a worker that can. Said once.
func (lm *limits) noGate(tool *stewardv1.ToolContract, actionID string) time.Duration {
	lm.noGateOnce.Do(func() {
		lm.logger.Warn("a tool with limits, and no gate to hold them (Config.Limits): its calls wait for a worker that has one", "tool", tool.GetName(), "action", actionID)
	})
	return limit.Busy
}

// holdBack records that a's next call waits for its tool's limits, wait
// from now — for a full cap (full), up to twice its last such wait, at
// most limitWaitMax: a slot frees when a call ends, which no one is told
// of.
func (lm *limits) holdBack(ctx context.Context, taskID string, a *stewardv1.Action, c cause, wait time.Duration, full bool) error {
	if full && a.Status == stewardv1.ActionStatus_ACTION_STATUS_WAITING && a.WaitKind == stewardv1.WaitKind_WAIT_KIND_LIMIT && a.UpdatedAt != nil {
		// Jittered over its upper half, so that calls held back together
		// do not all come back together, at limitWaitMax, to find the
		// one slot taken by the first of them.
		d := min(2*a.WaitUntil.AsTime().Sub(a.UpdatedAt.AsTime()), limitWaitMax)
		wait = max(wait, d/2+rand.N(d/2+1))
	}
	why := "its cap of calls in flight is full"
	if !full {
		why = "its rate allows the call only then"
	}
	return lm.wait(ctx, taskID, a, a.Status, c, stewardv1.WaitKind_WAIT_KIND_LIMIT, lm.now().Add(wait),
		fmt.Sprintf("tool %s is at its limits: %s", a.Tool, why))
}

// holdSlot keeps the slot takeSlot took for attempt while its call runs,
// renewing its lease every Lease/3 as the call's heartbeat does, and gives
// it back when the returned done is called. A renewal that fails is
// logged, not fatal: the next one, or the slot's lease, makes up for it.
func (lm *limits) holdSlot(ctx context.Context, call *prepared, actionID string, attempt uint32) (done func()) {
	if toolLimits(call.Tool).MaxConcurrent <= 0 || lm.cfg.Limits == nil {
		return func() {}
	}
	holder := lm.slotHolder(actionID, attempt)
	rctx, cancel := context.WithCancel(ctx)
	var renewing sync.WaitGroup
	renewing.Go(func() {
		tick := time.NewTicker(lm.cfg.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
				held, err := lm.cfg.Limits.Renew(rctx, call.limit, holder, toolLimits(call.Tool), lm.slotLease(), lm.now())
				switch {
				case err != nil && rctx.Err() == nil:
					lm.logger.Warn("a slot's lease not renewed", "tool", call.Tool.GetName(), "action", actionID, "err", err)
				case err == nil && !held:
					lm.logger.Warn("a slot's lease ended before its renewal and the cap is full: the call runs above the tool's cap", "tool", call.Tool.GetName(), "action", actionID)
				}
			}
		}
	})
	return func() {
		cancel()
		renewing.Wait()
		lm.releaseSlot(ctx, call, actionID, attempt)
	}
}

// releaseSlot gives back the slot takeSlot took for attempt. Failing to
// is logged, not fatal: the slot's lease gives it back.
func (lm *limits) releaseSlot(ctx context.Context, call *prepared, actionID string, attempt uint32) {
	if toolLimits(call.Tool).MaxConcurrent <= 0 || lm.cfg.Limits == nil {
		return
	}
	if err := lm.cfg.Limits.Release(context.WithoutCancel(ctx), call.limit, lm.slotHolder(actionID, attempt), lm.now()); err != nil {
		lm.logger.Warn("a slot not given back; its lease ends it", "tool", call.Tool.GetName(), "action", actionID, "err", err)
	}
}
