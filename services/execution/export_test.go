package execution

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/execution/breaker"
)

// BeforeClaim makes the plane run f just before each claim it appends —
// an ActionClaimed, or a first dispatch that carries the claim — so that a
// test can make a race with the claim certain.
func BeforeClaim(f func()) Option { return func(p *Plane) { p.beforeClaim = f } }

// The kinds of the plane's timers.
const (
	TimerWait      = timerWait
	TimerReconcile = timerReconcile
)

// Breakers returns the plane's circuit breakers, for a test to put one in
// the state it needs.
func (p *Plane) Breakers() *breaker.Set { return p.breakers }

// SettleLoaded is Settle of a, the action as the caller loaded it: a test
// hands it a stale copy to make a race with another settlement certain.
func (p *Plane) SettleLoaded(ctx context.Context, principal string, req *stewardv1.SettleActionRequest, a *stewardv1.Action) (*stewardv1.Action, error) {
	return p.settlement.settleLoaded(ctx, principal, req, a)
}

// Settle is the settlement's, as the plane's tests call it: the RPC
// edge calls the settlement directly.
func (p *Plane) Settle(ctx context.Context, principal string, req *stewardv1.SettleActionRequest) (*stewardv1.Action, error) {
	return p.settlement.Settle(ctx, rpc.Identity{Principal: principal}, req)
}
