package eventlog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/event"
)

// keepNewer returns filters with the filter subjects of the reaction
// consumer name that a newer build added for types this build does not
// know. In a rolling upgrade replicas of two builds share the consumer,
// and each makes it at start: were an older replica to narrow the filter
// to its own types, the server would pass over the newer types' events
// appended meanwhile, and no replica would ever get them. Kept, they come
// to this replica too, which leaves them for a newer one (React).
func (l *Log) keepNewer(ctx context.Context, name string, filters []string) []string {
	cons, err := l.js.Consumer(ctx, l.cfg.Stream, name)
	if err != nil {
		return filters // none yet, or unreadable: durable makes or updates it
	}
	cfg := cons.CachedInfo().Config
	for _, f := range append(cfg.FilterSubjects, cfg.FilterSubject) { // the server may keep one filter in either
		_, typ, ok := strings.Cut(f, ".*.") // TypeFilter's shape
		if ok && event.Owner(typ) == "" && !slices.Contains(filters, f) {
			filters = append(filters, f)
		}
	}
	return filters
}

// NewerEvent is what a follower reports (to its bad function) of an event
// of a type this build does not know: which task holds it, where. It
// wraps event.ErrUnknownType.
type NewerEvent struct {
	TaskID   string
	Sequence uint64
	Type     string
}

func (e *NewerEvent) Error() string {
	return fmt.Sprintf("task %s: event %d is of type %s, which this build does not know: a newer build's", e.TaskID, e.Sequence, e.Type)
}

func (e *NewerEvent) Unwrap() error { return event.ErrUnknownType }
