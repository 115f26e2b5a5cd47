package steward

import (
	"context"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// DefaultKeepAlive is KeepAlive's interval when it is given none: under
// half of the shortest agent_ask_after (1 minute).
const DefaultKeepAlive = 20 * time.Second

// refusedForGood reports whether a heartbeat's error will not go away.
func refusedForGood(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeNotFound, connect.CodeFailedPrecondition, connect.CodePermissionDenied, connect.CodeUnauthenticated, connect.CodeInvalidArgument:
		return true
	}
	return false
}

// Heartbeat says the agent is at work on the task (docs/liveness.md): it
// answers an open "still working?" — the answer's Question says what was
// asked — and resumes a task suspended for the agent's silence. Steward
// records one only when it is news, so it is cheap to send often.
func (c *Client) Heartbeat(ctx context.Context, taskID, note string) (*stewardv1.HeartbeatResponse, error) {
	return call(ctx, c.retry, c.tasks.Heartbeat, &stewardv1.HeartbeatRequest{TaskId: taskID, Note: note})
}

// KeepAlive heartbeats the task every interval until ctx ends or the
// returned stop is called, for an agent busy with something long (a model
// call, a wait for a person) that sends Steward nothing meanwhile. Each
// answer goes to onBeat, if not nil: what the agent was asked, whether its
// task resumed; a failed heartbeat goes there too, with a nil answer.
//
// Steward records a heartbeat only once the agent has been silent for half
// its contract's agent_ask_after, so interval should be under that half;
// zero or less takes DefaultKeepAlive. A heartbeat refused for good — the
// task ended, is not found, or is not the caller's — ends the keep-alive
// (onBeat is told).
func (c *Client) KeepAlive(ctx context.Context, taskID string, interval time.Duration, onBeat func(*stewardv1.HeartbeatResponse, error)) (stop func()) {
	if interval <= 0 {
		interval = DefaultKeepAlive
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			resp, err := c.Heartbeat(ctx, taskID, "")
			if onBeat != nil && ctx.Err() == nil {
				onBeat(resp, err)
			}
			if refusedForGood(err) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
