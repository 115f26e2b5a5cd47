package state

import (
	"context"
	"slices"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// Breakers is the view of every execution worker's circuit breakers, folded
// from the BreakerChanged events on the service subjects: the last change
// of each (tenant, service key, worker) is where that breaker stands. A
// tenant's tools have breakers of their own; the global tools' ("" tenant)
// are every tenant's. It is safe for concurrent use.
type Breakers struct {
	progress eventlog.Progress
	mu       sync.RWMutex
	last     map[[3]string]*stewardv1.Breaker
}

// NewBreakers returns an empty view.
func NewBreakers() *Breakers { return &Breakers{last: map[[3]string]*stewardv1.Breaker{}} }

// Apply folds one service event.
func (b *Breakers) Apply(rec *stewardv1.EventRecord) error {
	defer b.progress.Advance(rec.Sequence)
	c := rec.Event.GetBreakerChanged()
	if c == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last[[3]string{c.Tenant, c.ServiceKey, c.Worker}] = &stewardv1.Breaker{
		ServiceKey: c.ServiceKey, Worker: c.Worker, State: c.To, Since: rec.Event.Time, Until: c.Until,
		Requests: c.Requests, Failures: c.Failures, Tenant: c.Tenant,
	}
	return nil
}

// Skip passes over an event that could not be read.
func (b *Breakers) Skip(seq uint64, _ error) { b.progress.Advance(seq) }

// Progress says how far the view got.
func (b *Breakers) Progress() *eventlog.Progress { return &b.progress }

// List returns the breakers tenant sees — the global tools' and its own
// tools' — by service key, tenant, then worker; only those not closed
// when notClosed is set.
func (b *Breakers) List(tenant string, notClosed bool) []*stewardv1.Breaker {
	b.mu.RLock()
	out := make([]*stewardv1.Breaker, 0, len(b.last))
	for _, br := range b.last {
		if notClosed && br.State == stewardv1.BreakerState_BREAKER_STATE_CLOSED || br.Tenant != "" && br.Tenant != tenant {
			continue
		}
		out = append(out, proto.CloneOf(br))
	}
	b.mu.RUnlock()
	slices.SortFunc(out, func(x, y *stewardv1.Breaker) int {
		if c := strings.Compare(x.ServiceKey, y.ServiceKey); c != 0 {
			return c
		}
		if c := strings.Compare(x.Tenant, y.Tenant); c != 0 {
			return c
		}
		return strings.Compare(x.Worker, y.Worker)
	})
	return out
}

func (s *queryService) ListBreakers(ctx context.Context, req *connect.Request[stewardv1.ListBreakersRequest]) (*connect.Response[stewardv1.ListBreakersResponse], error) {
	p := s.plane
	if err := eventlog.CatchUp(ctx, p.breakers, p.log.LastServiceSequence); err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ListBreakersResponse{Breakers: p.breakers.List(rpc.Caller(ctx).Tenant, req.Msg.NotClosed)}), nil
}
