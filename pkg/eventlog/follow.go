package eventlog

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

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

// follow reads filters from stream sequence after+1 on through one
// consumer of its own until ctx ends, fn fails, or the consumer does: its
// caller (keepFollowing) follows anew from where its reader got to.
//
// It is jetstream's ordered consumer written out, because that one, once
// its consumer went with a lost node, made the next one outside any
// context: each try waited up to 10 s for a meta leader, then backed off
// to 10 s between tries, for ever, and Stop reached none of it. On a
// three-node cluster a follower so stood behind the log for more than 20 s
// after its node's leader was killed (TestFollowersAfterTheStreamLeadersNodeIsLost,
// in CI). Here every step answers ctx, a try is bounded by followCreate,
// and a missed heartbeat or a lost delivery ends the follow.
func (l *Log) follow(ctx context.Context, filters []string, after uint64, fn func(*stewardv1.EventRecord) error, bad func(seq uint64, err error)) error {
	cons, err := l.followConsumer(ctx, filters, after)
	if err != nil {
		return err
	}
	// Each pull is bounded in bytes as well as in messages, so a reader
	// catching up on large events (plans of up to a message each) buffers
	// a few MiB, not hundreds of them.
	it, err := cons.Messages(jetstream.PullMaxMessagesWithBytesLimit(followBufferMessages, l.pullBytes()),
		jetstream.PullHeartbeat(followHeartbeat), jetstream.WithMessagesErrOnMissingHeartbeat(true))
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	var delivered uint64
	for {
		msg, err := it.Next()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		// Nothing is acknowledged, so nothing is sent again: a delivery
		// out of turn means one was lost, and only following anew from
		// the last one applied gets it.
		if meta.Sequence.Consumer != delivered+1 {
			return fmt.Errorf("follow: delivery %d came after %d; one was lost on its way", meta.Sequence.Consumer, delivered)
		}
		delivered = meta.Sequence.Consumer
		if err := l.hand(ctx, msg.Subject(), meta.Sequence.Stream, msg.Data(), fn, bad); err != nil {
			return err
		}
	}
}

// hand decodes one followed event and hands it to fn; one that cannot
// be decoded is set aside and reported to bad, if set.
func (l *Log) hand(ctx context.Context, subject string, seq uint64, data []byte, fn func(*stewardv1.EventRecord) error, bad func(seq uint64, err error)) error {
	ev, err := l.decode(subject, data)
	if err != nil {
		if derr := l.setAside(ctx, ReaderConsumer, subject, seq, data, err); derr != nil {
			l.cfg.Logger.Error("set aside bad event", "seq", seq, "err", derr)
		}
		if bad != nil {
			bad(seq, err)
		}
		return nil
	}
	return fn(&stewardv1.EventRecord{Sequence: seq, Event: ev})
}

// followConsumer makes a follow's consumer: in memory, on one replica,
// acknowledging nothing, its name its own.
func (l *Log) followConsumer(ctx context.Context, filters []string, after uint64) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Name:              nuid.Next(),
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		FilterSubjects:    filters,
		InactiveThreshold: followInactive,
		Replicas:          1,
		MemoryStorage:     true,
	}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cctx, cancel := context.WithTimeout(ctx, followCreate)
	defer cancel()
	return l.js.CreateConsumer(cctx, l.cfg.Stream, cfg)
}

// followCreate bounds one try at making a follow's consumer: a cluster without a meta leader answers none, and the next
// try, a second later (keepFollowing), may find one.
const followCreate = 5 * time.Second

// followInactive is how long the server keeps a follow's consumer once
// nobody pulls from it: the follow that made it has ended. Planes may not
// delete consumers (natsperm's refusedAPI), so none tries.
const followInactive = time.Minute

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
