package control

import (
	"bytes"
	"context"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// maxCachedChains bounds the chains a chainCache keeps folded; past it
// the cache starts over, and the next read of each folds it anew.
const maxCachedChains = 4096

// chainCache keeps chains of one kind (schedules, rollouts) folded, so
// that a read of one reads only the events appended since the last read,
// not the whole chain: a schedule firing every minute for a year holds
// over a million events, and its every tick and run end reads it. A
// cached fold may be behind the log, never ahead: every write on a chain
// is conditional on the head it was folded at, and one that finds the
// chain moved on reads again. Safe for concurrent use.
type chainCache[T proto.Message] struct {
	// after reads a chain's events stored after a stream sequence, each
	// checked against its own hash; the cache links them.
	after func(ctx context.Context, id string, after uint64) ([]*stewardv1.EventRecord, error)
	// apply folds one event into a fold, refusing one that does not follow.
	apply func(T, *stewardv1.EventRecord) error
	fresh func() T

	mu    sync.Mutex
	folds map[string]cachedChain[T] // never changed once here
}

type cachedChain[T proto.Message] struct {
	v    T
	head eventlog.Head
}

func newChainCache[T proto.Message](fresh func() T, after func(context.Context, string, uint64) ([]*stewardv1.EventRecord, error), apply func(T, *stewardv1.EventRecord) error) *chainCache[T] {
	return &chainCache[T]{after: after, apply: apply, fresh: fresh, folds: map[string]cachedChain[T]{}}
}

// load returns a copy of chain id folded up to the log's last event of
// it, and that event's head; NotFound when the chain has no events.
func (c *chainCache[T]) load(ctx context.Context, id, what string) (T, eventlog.Head, error) {
	c.mu.Lock()
	cached, ok := c.folds[id]
	c.mu.Unlock()
	next, head := c.fresh(), eventlog.Head{}
	if ok {
		next, head = proto.CloneOf(cached.v), cached.head
	}
	recs, err := c.after(ctx, id, head.Sequence)
	if err != nil {
		return next, head, err
	}
	for _, r := range recs {
		if !bytes.Equal(r.Event.PrevHash, head.Hash) {
			return next, head, errs.New(errs.Corrupt, "%s %s: event %d does not follow the one before (prev_hash)", what, id, r.Sequence)
		}
		if err := c.apply(next, r); err != nil {
			return next, head, err
		}
		head = eventlog.Head{Sequence: r.Sequence, Hash: r.Event.Hash}
	}
	if head.Sequence == 0 {
		return next, head, errs.New(errs.NotFound, "%s %s not found", what, errs.Quote(id))
	}
	if len(recs) > 0 {
		c.keep(id, cachedChain[T]{v: proto.CloneOf(next), head: head})
	}
	return next, head, nil
}

// keep stores f as chain id's fold, unless a later one is there.
func (c *chainCache[T]) keep(id string, f cachedChain[T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.folds) >= maxCachedChains {
		c.folds = map[string]cachedChain[T]{}
	}
	if cur, ok := c.folds[id]; !ok || cur.head.Sequence < f.head.Sequence {
		c.folds[id] = f
	}
}
