package eventlog

import (
	"context"
	"log/slog"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Follow delivers task events in order from stream sequence after+1 on —
// every task's, or only taskID's when it is not empty — and then follows
// new ones, until ctx ends, fn returns an error, or its consumer is lost
// (a node gone, a heartbeat missed: KeepReading then follows anew from
// where its reader got to). Nothing is skipped or repeated. Events that
// cannot be decoded are set aside and reported to bad, if set.
func (l *Log) Follow(ctx context.Context, taskID string, after uint64, fn func(*stewardv1.EventRecord) error, bad func(seq uint64, err error)) error {
	filter := l.cfg.SubjectPrefix + ".>"
	if taskID != "" {
		if !ValidTaskID(taskID) {
			return ErrInvalidTaskID
		}
		filter = l.Subject(taskID)
	}
	return l.follow(ctx, []string{filter}, after, fn, bad)
}

// FollowTypes is Follow over every task's events of the given types only:
// the server sends nothing else, so a reader that needs a few types does
// not receive, decode and drop every event of every task.
func (l *Log) FollowTypes(ctx context.Context, types []string, after uint64, fn func(*stewardv1.EventRecord) error, bad func(seq uint64, err error)) error {
	return l.follow(ctx, l.typeFilters(types), after, fn, bad)
}

func (l *Log) typeFilters(types []string) []string {
	filters := make([]string, len(types))
	for i, typ := range types {
		filters[i] = l.TypeFilter(typ)
	}
	return filters
}

// FollowTools is Follow over the tool registrations.
func (l *Log) FollowTools(ctx context.Context, after uint64, fn func(*stewardv1.EventRecord) error, bad func(seq uint64, err error)) error {
	return l.follow(ctx, []string{l.cfg.ToolPrefix + ".>"}, after, fn, bad)
}

// pullBytes bounds one pull of a follower: never less than the largest
// message the server takes, which could not be delivered otherwise.
func (l *Log) pullBytes() int { return max(followBufferBytes, l.maxPayload) }

// followBufferMessages is the count bound of a pull, jetstream's default.
// A bound in bytes alone (PullMaxBytes) makes jetstream buffer up to a
// million messages, allocating a channel of that many (8 MB) per
// follower: TestIdleRSS went from under 80 MB to 103 MB.
const followBufferMessages = 500

// followHeartbeat is how often the server tells an idle follower it is
// still there. A pull lost on its way (on a cluster just formed, before
// the reply subject's interest reached the stream leader's node) is
// noticed after two missed beats and the consumer made again: with
// jetstream's 5 s default a fresh control plane sat at 0 for more than
// its 5 s catch-up bound and answered Unavailable.
const followHeartbeat = time.Second

// followBufferBytes is what a follower buffers at most, its largest
// messages aside (pullBytes).
const followBufferBytes = 8 << 20

// logAttrs is shared by the set-aside paths.
func logAttrs(subject string, seq uint64, err error) []any {
	return []any{slog.String("subject", subject), slog.Uint64("seq", seq), slog.Any("err", err)}
}
