package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/eventlog"
)

// addSubjects adds to the event stream, when it is there, the subjects
// this version writes that an earlier version's stream lacks (a new kind
// of chain, such as rollouts'), and returns them. A plane may not update a
// stream (docs/nats.md), so a newer plane started on the older stream
// cannot add them: a rolling upgrade runs this version's nats-streams, as
// a user allowed to update streams, before its first plane starts
// (docs/compatibility.md).
func addSubjects(ctx context.Context, js jetstream.JetStream, replicas int) ([]string, error) {
	s, err := js.Stream(ctx, eventlog.DefaultStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil // the first plane creates it, with every subject
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", eventlog.DefaultStream, err)
	}
	before := s.CachedInfo().Config.Subjects
	// Open adds what is missing and touches nothing else.
	if _, err := eventlog.Open(ctx, js, eventlog.Config{Replicas: replicas, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		return nil, err
	}
	if s, err = js.Stream(ctx, eventlog.DefaultStream); err != nil {
		return nil, fmt.Errorf("stream %s: %w", eventlog.DefaultStream, err)
	}
	return slices.DeleteFunc(slices.Clone(s.CachedInfo().Config.Subjects), func(x string) bool { return slices.Contains(before, x) }), nil
}
