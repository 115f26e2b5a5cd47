package execution

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/breaker"
	"github.com/steward-run/steward/services/execution/limit"
)

// A tool's contract may limit how hard it is driven (ToolLimits): a cap
// on its calls in flight and a rate, held over every worker by the gate
// (Config.Limits), and its breaker's thresholds. A call the gate holds
// back is not dispatched: dispatch answers errs.Later, so the event or
// timer that brought it comes again after the wait, its permit still
// unclaimed (or its claim still this worker's, under its lease). Nothing
// is recorded, nothing is dropped, and the one dispatch the log lets in
// per attempt is made once a slot is free — after a restart too.

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
func (p *Plane) allowBreaker(key string, tool *stewardv1.ToolContract) (bool, time.Time, *breaker.Transition) {
	if err := p.breakers.Tune(key, breakerConfig(tool)); err != nil {
		p.logger.Warn("the tool's breaker thresholds do not hold; the plane's are used", "tool", tool.GetName(), "err", err)
	}
	return p.breakers.Allow(key, p.now())
}

// slotHolder names one attempt's slot: the action, the attempt and this
// worker, so that a slot one worker gives back is never another's.
func (p *Plane) slotHolder(actionID string, attempt uint32) string {
	return fmt.Sprintf("%s/%d/%s", actionID, attempt, p.cfg.Worker)
}

// slotLease is how long a slot outlives its holder's last renewal: two
// leases, so that a missed renewal does not lose a live call's slot, and
// a worker that died mid-call gives its slots back about when its claims
// are taken over.
func (p *Plane) slotLease() time.Duration { return 2 * p.cfg.Lease }

// takeSlot takes a slot for attempt of the action under its tool's
// limits, or answers errs.Later with how long to wait.
func (p *Plane) takeSlot(ctx context.Context, call *prepared, actionID string, attempt uint32) error {
	l := toolLimits(call.Tool)
	if l.None() {
		return nil
	}
	if p.cfg.Limits == nil {
		// A plane without the gate cannot hold the limits, and must not
		// break them: the call waits for a worker that can.
		p.logger.Warn("a tool with limits, and no gate to hold them (Config.Limits): the call waits", "tool", call.Tool.GetName(), "action", actionID)
		return errs.Later(limit.Busy, "tool %s has limits and this worker keeps none", call.Tool.GetName())
	}
	wait, err := p.cfg.Limits.Take(ctx, call.limit, p.slotHolder(actionID, attempt), l, p.slotLease(), p.now())
	if err != nil || wait == 0 {
		return err
	}
	return errs.Later(wait, "tool %s is at its limits (%s); the call waits", call.Tool.GetName(), call.limit)
}

// holdSlot keeps the slot takeSlot took for attempt while its call runs,
// renewing its lease every Lease/3 as the call's heartbeat does, and gives
// it back when the returned done is called. A renewal that fails is
// logged, not fatal: the next one, or the slot's lease, makes up for it.
func (p *Plane) holdSlot(ctx context.Context, call *prepared, actionID string, attempt uint32) (done func()) {
	if toolLimits(call.Tool).MaxConcurrent <= 0 || p.cfg.Limits == nil {
		return func() {}
	}
	holder := p.slotHolder(actionID, attempt)
	rctx, cancel := context.WithCancel(ctx)
	var renewing sync.WaitGroup
	renewing.Go(func() {
		tick := time.NewTicker(p.cfg.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
				if err := p.cfg.Limits.Renew(rctx, call.limit, holder, p.slotLease(), p.now()); err != nil && rctx.Err() == nil {
					p.logger.Warn("a slot's lease not renewed", "tool", call.Tool.GetName(), "action", actionID, "err", err)
				}
			}
		}
	})
	return func() {
		cancel()
		renewing.Wait()
		p.releaseSlot(ctx, call, actionID, attempt)
	}
}

// releaseSlot gives back the slot takeSlot took for attempt. Failing to
// is logged, not fatal: the slot's lease gives it back.
func (p *Plane) releaseSlot(ctx context.Context, call *prepared, actionID string, attempt uint32) {
	if toolLimits(call.Tool).MaxConcurrent <= 0 || p.cfg.Limits == nil {
		return
	}
	if err := p.cfg.Limits.Release(context.WithoutCancel(ctx), call.limit, p.slotHolder(actionID, attempt), p.now()); err != nil {
		p.logger.Warn("a slot not given back; its lease ends it", "tool", call.Tool.GetName(), "action", actionID, "err", err)
	}
}
