package app

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/stores"
)

// storesAttempt bounds one attempt to open the stores, and storesWait all
// of them: a start gives JetStream this long to answer before it fails (a
// three-node cluster creating every plane's streams at once, on a machine
// busy with other work, took over a minute in CI: TestClusterGateway).
// storesPause is the pause between attempts.
const (
	storesAttempt = 10 * time.Second
	storesWait    = 2 * time.Minute
	storesPause   = time.Second
)

// openStores opens the stores, asking again while JetStream has not
// answered: a cluster only just formed, or electing its meta leader, can
// leave a stream's info unanswered for longer than one request waits (CI
// saw a plane exit so, 5 s after its three nodes were ready), and a plane
// that gave up at once would only be restarted to try again. Anything
// JetStream did answer — a refusal, a config it will not take — ends the
// start at once.
func (m *Server) openStores(ctx context.Context, js jetstream.JetStream, cfg stores.Config) (*stores.Set, error) {
	deadline := time.Now().Add(storesWait)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, min(storesAttempt, time.Until(deadline)))
		st, err := stores.Open(actx, js, cfg)
		cancel()
		// A refused publish reaches the client only as an asynchronous
		// error, the request then timing out: a permission the plane's
		// NATS user lacks is no silence to wait out.
		if err == nil || !unanswered(err) || errors.Is(js.Conn().LastError(), nats.ErrPermissionViolation) || ctx.Err() != nil {
			return st, err
		}
		m.logger.Warn("JetStream has not answered yet; asking again", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(storesPause):
		}
		// No attempt starts with too little time left to ask: it would
		// fail at once and hide why the last one did.
		if time.Until(deadline) < storesPause {
			return nil, err
		}
	}
}

// unanswered reports whether err says JetStream did not answer, or is not
// ready to (503: no meta leader yet), rather than that it refused.
func unanswered(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		(errors.As(err, &api) && api.Code == 503 && api.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabledForAccount)
}
