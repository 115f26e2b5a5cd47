package eventlog

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Follow delivers task events in order from stream sequence after+1 on —
// every task's, or only taskID's when it is not empty — and then follows
// new ones, until ctx ends or fn returns an error. It uses an ordered
// consumer: nothing is stored on the server, and nothing is skipped or
// repeated. Events that cannot be decoded are set aside and reported to
// bad, if set.
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

func (l *Log) follow(ctx context.Context, filters []string, after uint64, fn func(*stewardv1.EventRecord) error, bad func(seq uint64, err error)) error {
	// Each pull is bounded in bytes as well as in messages, so a reader
	// catching up on large events (plans of up to a message each) buffers
	// a few MiB, not hundreds of them.
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filters, DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := l.js.OrderedConsumer(ctx, l.cfg.Stream, cfg)
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessagesWithBytesLimit(followBufferMessages, l.pullBytes()), jetstream.PullHeartbeat(followHeartbeat))
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, nats.ErrConnectionClosed) {
				return err
			}
			l.cfg.Logger.Warn("follow: transient error", "err", err)
			continue
		}
		meta, err := msg.Metadata()
		if err != nil {
			continue
		}
		seq := meta.Sequence.Stream
		ev, err := l.decode(msg.Subject(), msg.Data())
		if err != nil {
			if derr := l.setAside(ctx, ReaderConsumer, msg.Subject(), seq, msg.Data(), err); derr != nil {
				l.cfg.Logger.Error("set aside bad event", "seq", seq, "err", derr)
			}
			if bad != nil {
				bad(seq, err)
			}
			continue
		}
		if err := fn(&stewardv1.EventRecord{Sequence: seq, Event: ev}); err != nil {
			return err
		}
	}
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
