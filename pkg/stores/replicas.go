package stores

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Raised is what Raise did to one stream.
type Raised struct {
	Stream string
	// From and To are its replicas before and after; equal when it was
	// left as it was.
	From, To int
	// Missing says there is no such stream: the first plane that opens
	// it creates it, at its --replicas.
	Missing bool
}

// Raise sets each stream of names that has fewer than n replicas to n,
// in place: JetStream copies its messages to the new peers while the
// stream serves on. It never lowers one: a stream with more than n
// replicas is left as it is. It returns once every raised stream's new
// replicas are current, or ctx ends. js must be allowed to update streams
// (a plane's NATS user is not: natsperm).
func Raise(ctx context.Context, js jetstream.JetStream, names []string, n int) ([]Raised, error) {
	var out []Raised
	for _, name := range names {
		stream, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			out = append(out, Raised{Stream: name, Missing: true})
			continue
		}
		if err != nil {
			return out, fmt.Errorf("stream %s: %w", name, err)
		}
		cfg := stream.CachedInfo().Config
		r := Raised{Stream: name, From: cfg.Replicas, To: cfg.Replicas}
		if cfg.Replicas < n {
			cfg.Replicas = n
			if _, err := js.UpdateStream(ctx, cfg); err != nil {
				return out, fmt.Errorf("raise stream %s from %d to %d replicas: %w", name, r.From, n, err)
			}
			r.To = n
		}
		out = append(out, r)
	}
	for _, r := range out {
		if r.To > r.From {
			if err := caughtUp(ctx, js, r.Stream, r.To); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// caughtUp waits until stream has a leader and n-1 current followers.
func caughtUp(ctx context.Context, js jetstream.JetStream, name string, n int) error {
	state := "no answer yet"
	for {
		stream, err := js.Stream(ctx, name)
		switch {
		case err != nil:
			state = err.Error()
		case stream.CachedInfo().Cluster == nil:
			state = "no cluster information"
		default:
			c := stream.CachedInfo().Cluster
			current := 0
			for _, p := range c.Replicas {
				if p.Current {
					current++
				}
			}
			if c.Leader != "" && current == n-1 {
				return nil
			}
			state = fmt.Sprintf("leader %q, %d of %d followers current", c.Leader, current, n-1)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s: its %d replicas did not catch up (%s): %w", name, n, state, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
