package execution

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/execution/breaker"
)

// Each execution worker keeps its own circuit breaker per service key,
// from the calls it makes itself — as a client-side breaker does — so that
// deciding needs no round trip. What changes is recorded on the service's
// subject (steward.service.<key>), so people and views see every worker's
// breakers; and an action held by an open breaker records why it waits on
// its own task. A tenant's tools count against breakers of their own
// (breakerKey), recorded on the tenant's service subject.

// breakerKey is what a call to tool, of tenant ("" for a global tool),
// counts against in the breakers: its service key, and for a tenant's
// tool the tenant too, spelled as its subject spells it,
// "=<tenant>.<key>" (eventlog.TenantToken). So a tenant's tool, however
// it fails, never opens a breaker that a global tool's calls, or another
// tenant's, count on; a global tool's breaker is every tenant's, as the
// service behind it is.
func breakerKey(tenant string, tool *stewardv1.ToolContract) string {
	if tenant == "" {
		return serviceKey(tool)
	}
	return eventlog.TenantToken(tenant) + "." + serviceKey(tool)
}

// splitBreakerKey undoes breakerKey: neither a tenant's token nor a
// service key holds a dot.
func splitBreakerKey(key string) (tenant, service string) {
	token, service, ok := strings.Cut(key, ".")
	if !ok {
		return "", key
	}
	tenant, _ = eventlog.TenantOfToken(token)
	return tenant, service
}

// serviceOf is the service key in a breaker's key.
func serviceOf(key string) string {
	_, service := splitBreakerKey(key)
	return service
}

// noteBreaker records a breaker transition, if there was one. Failing to
// record it is logged, not fatal: the breaker itself has already changed.
func (lm *limits) noteBreaker(ctx context.Context, tr *breaker.Transition) {
	if tr == nil {
		return
	}
	tenant, service := splitBreakerKey(tr.Key)
	lm.logger.Info("circuit breaker changed", "service", service, "tenant", tenant, "from", tr.From, "to", tr.To, "requests", tr.Requests, "failures", tr.Failures)
	if err := lm.recordBreaker(ctx, tr); err != nil {
		lm.logger.Warn("circuit breaker change not recorded", "service", service, "tenant", tenant, "err", err)
	}
}

func (lm *limits) recordBreaker(ctx context.Context, tr *breaker.Transition) error {
	tenant, service := splitBreakerKey(tr.Key)
	change := &stewardv1.BreakerChanged{
		ServiceKey: service, From: breakerState(tr.From), To: breakerState(tr.To),
		Requests: uint32(tr.Requests), Failures: uint32(tr.Failures), Worker: lm.cfg.Worker, Tenant: tenant,
	}
	if tr.To == breaker.Open {
		change.Until = timestamppb.New(tr.Until)
	}
	ev, err := event.New(event.Meta{
		// tr.Key is the service key itself for a global tool's breaker:
		// its ids are as they were before tenants.
		ID:    event.ID("breaker", tr.Key, lm.cfg.Worker, tr.To.String(), fmt.Sprint(tr.At.UnixNano())),
		Actor: &stewardv1.Actor{Principal: lm.cfg.Worker, Plane: PlaneName},
	}, change)
	if err != nil {
		return err
	}
	for range 8 {
		head, last, err := lm.log.ServiceHead(ctx, tenant, service)
		if err != nil {
			return err
		}
		if last.GetEventId() == ev.EventId {
			return nil
		}
		if _, err = lm.log.Append(ctx, head, ev); !errs.Is(err, errs.Conflict) {
			return err
		}
	}
	return errs.New(errs.Conflict, "service %s: too many concurrent breaker changes", service)
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

// serviceKey is what a tool's calls count against in the breakers.
func serviceKey(tool *stewardv1.ToolContract) string {
	if tool.GetServiceKey() != "" {
		return tool.GetServiceKey()
	}
	return tool.GetName()
}

// breakerOutcome says what a result tells about the service: a transient
// failure or no answer counts against it; a deterministic or validation
// failure is about the request, not the service.
func breakerOutcome(res adapter.Result) breaker.Outcome {
	switch {
	case res.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
		return breaker.Success
	case res.Status == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN,
		res.FailureClass == stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT:
		return breaker.Failure
	}
	return breaker.Neutral
}
