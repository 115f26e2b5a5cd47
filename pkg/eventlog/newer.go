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
	var kept []string
	for _, f := range append(cfg.FilterSubjects, cfg.FilterSubject) { // the server may keep one filter in either
		prefix, typ, ok := strings.Cut(f, ".*.") // TypeFilter's shape
		// One type's, never a wildcard over many: kept, every build would
		// make the consumer with it again, for good.
		if ok && prefix != "" && !strings.ContainsAny(prefix+typ, "*>") &&
			event.Owner(typ) == "" && !slices.Contains(filters, f) {
			kept = append(kept, f)
		}
	}
	if len(kept) > 0 {
		// What an operator looks for when a consumer's acknowledgements
		// stop (steward_consumer_ack_pending): no newer replica left to
		// take these types' events, after a rollback (docs/compatibility.md).
		l.cfg.Logger.Warn("consumer keeps the filters of types a newer build added, whose events wait for a newer replica", "consumer", name, "filters", kept)
	}
	return append(filters, kept...)
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
