package execution

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/breaker"
)

// Each execution worker keeps its own circuit breaker per service key,
// from the calls it makes itself — as a client-side breaker does — so that
// deciding needs no round trip. What changes is recorded on the service's
// subject (steward.service.<key>), so people and views see every worker's
// breakers; and an action held by an open breaker records why it waits on
// its own task.

// noteBreaker records a breaker transition, if there was one. Failing to
// record it is logged, not fatal: the breaker itself has already changed.
func (p *Plane) noteBreaker(ctx context.Context, tr *breaker.Transition) {
	if tr == nil {
		return
	}
	p.logger.Info("circuit breaker changed", "service", tr.Key, "from", tr.From, "to", tr.To, "requests", tr.Requests, "failures", tr.Failures)
	if err := p.recordBreaker(ctx, tr); err != nil {
		p.logger.Warn("circuit breaker change not recorded", "service", tr.Key, "err", err)
	}
}

func (p *Plane) recordBreaker(ctx context.Context, tr *breaker.Transition) error {
	change := &stewardv1.BreakerChanged{
		ServiceKey: tr.Key, From: breakerState(tr.From), To: breakerState(tr.To),
		Requests: uint32(tr.Requests), Failures: uint32(tr.Failures), Worker: p.cfg.Worker,
	}
	if tr.To == breaker.Open {
		change.Until = timestamppb.New(tr.Until)
	}
	ev, err := event.New(event.Meta{
		ID:    event.ID("breaker", tr.Key, p.cfg.Worker, tr.To.String(), fmt.Sprint(tr.At.UnixNano())),
		Actor: &stewardv1.Actor{Principal: p.cfg.Worker, Plane: PlaneName},
	}, change)
	if err != nil {
		return err
	}
	for range 8 {
		head, last, err := p.log.ServiceHead(ctx, tr.Key)
		if err != nil {
			return err
		}
		if last.GetEventId() == ev.EventId {
			return nil
		}
		if _, err = p.log.Append(ctx, head, ev); !errs.Is(err, errs.Conflict) {
			return err
		}
	}
	return errs.New(errs.Conflict, "service %s: too many concurrent breaker changes", tr.Key)
}

func breakerState(s breaker.State) stewardv1.BreakerState {
	switch s {
	case breaker.Closed:
		return stewardv1.BreakerState_BREAKER_STATE_CLOSED
	case breaker.Open:
		return stewardv1.BreakerState_BREAKER_STATE_OPEN
	case breaker.HalfOpen:
		return stewardv1.BreakerState_BREAKER_STATE_HALF_OPEN
	}
	return stewardv1.BreakerState_BREAKER_STATE_UNSPECIFIED
}
