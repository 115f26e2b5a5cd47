package steward

import (
	"context"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

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
func (c *Client) KeepAlive(ctx context.Context, taskID string, interval time.Duration, onBeat func(*stewardv1.HeartbeatResponse, error)) (stop func()) {
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
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
