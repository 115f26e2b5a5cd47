// Package limit holds the calls to a tool within the limits its contract
// sets (ToolLimits): at most so many in flight at once, and a rate with a
// burst — over every execution worker, not per process.
//
// A limit's state is one entry of a JetStream KV bucket per key (a tool,
// or a tool of one tenant): the calls holding a slot, each with the end of
// its lease, and the rate's schedule. Every change is a compare-and-set on
// the entry's revision, so of workers racing for the last slot one wins;
// the others are told how long to wait. A slot is held under a lease its
// holder renews while its call runs, so that a worker that dies holding
// one gives it back within the lease.
//
// The package decides and stores; it never waits. Waiting is the caller's:
// the execution plane records the wait on the task's log and sets a
// durable timer for its end, so a call held back survives a restart and
// goes out once.
package limit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/natsperm"
)

// Bucket is the KV bucket the limits' state is kept in.
const Bucket = natsperm.ToolLimitsBucket

// BucketConfig is how the execution plane opens Bucket. Its entries are
// small and rewritten on every call of a limited tool; an entry left by a
// tool no longer called ages out after a day.
func BucketConfig(replicas int, logger *slog.Logger) bucket.Config {
	return bucket.Config{Name: Bucket, Description: "calls in flight and rate schedules of tools with limits", TTL: 24 * time.Hour, Replicas: replicas, Logger: logger}
}

// Limits are one key's limits; a zero field holds nothing back.
type Limits struct {
	// MaxConcurrent is how many holders a key may have at once.
	MaxConcurrent int
	// Rate is how many takes a second the key allows on average, and
	// Burst how many at once after a quiet spell (at least 1).
	Rate  float64
	Burst int
}

// None says whether l holds nothing back.
func (l Limits) None() bool { return l.MaxConcurrent <= 0 && l.Rate <= 0 }

// Busy is how long a caller refused by a full cap waits before it asks
// again, jittered by up to as much again so that the waiting callers do
// not all come back at once. A slot usually frees when a call ends, which
// no one is told of: asking again is the price of keeping no waiter list.
const Busy = 200 * time.Millisecond

// Gate takes and gives back slots under Limits. Its methods are safe for
// concurrent use, in one process and across processes on one bucket.
type Gate struct {
	kv jetstream.KeyValue
}

// New returns a Gate over kv, a bucket opened with BucketConfig.
func New(kv jetstream.KeyValue) *Gate { return &Gate{kv: kv} }

// state is a key's entry.
type state struct {
	// Holders maps a holder to the end of its lease, in Unix nanoseconds.
	Holders map[string]int64 `json:"holders,omitempty"`
	// Next is the rate's theoretical arrival time (GCRA) of the next
	// take, in Unix nanoseconds.
	Next int64 `json:"next,omitempty"`
}

// tries bounds the compare-and-set loop: past it the key is too busy, and
// the caller waits as for a full cap.
const tries = 16

// Take takes a slot of key for holder at now, leased for lease. It
// answers 0 when taken (or when holder holds one already: a retry), and
// otherwise how long to wait before asking again. Only a key with
// MaxConcurrent keeps its holders; a rate alone needs no Release.
func (g *Gate) Take(ctx context.Context, key, holder string, l Limits, lease time.Duration, now time.Time) (time.Duration, error) {
	if l.None() {
		return 0, nil
	}
	for range tries {
		st, rev, err := g.read(ctx, key)
		if err != nil {
			return 0, err
		}
		wait, _ := st.admit(holder, l, lease, now)
		if wait > 0 {
			return wait, nil
		}
		if err := g.write(ctx, key, st, rev); errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	return jitter(Busy), nil
}

// Release gives back holder's slot of key, if it holds one.
func (g *Gate) Release(ctx context.Context, key, holder string, now time.Time) error {
	return g.update(ctx, key, func(st *state) bool {
		if _, ok := st.Holders[holder]; !ok {
			return false
		}
		delete(st.Holders, holder)
		st.prune(now)
		return true
	})
}

// Peek says how long a take of key for holder at now would wait, without
// taking anything: one read, for a caller that would rather not prepare
// a call the gate holds back. full says the cap is what holds it (or
// contention on the key), not the rate: no one knows when a slot frees.
func (g *Gate) Peek(ctx context.Context, key, holder string, l Limits, now time.Time) (wait time.Duration, full bool, err error) {
	if l.None() {
		return 0, false, nil
	}
	st, _, err := g.read(ctx, key)
	if err != nil {
		return 0, false, err
	}
	wait, full = st.admit(holder, l, 0, now)
	return wait, full, nil
}

// Renew extends holder's slot of key to lease from now, and answers
// whether holder holds one. A slot whose lease ended (a renewal that came
// too late) is taken again if the cap has room — its call is still going
// — and otherwise lost: the call then runs above the cap, which the
// caller is told to say.
func (g *Gate) Renew(ctx context.Context, key, holder string, l Limits, lease time.Duration, now time.Time) (bool, error) {
	held := false
	err := g.update(ctx, key, func(st *state) bool {
		st.prune(now)
		if _, live := st.Holders[holder]; !live && len(st.Holders) >= l.MaxConcurrent {
			held = false
			return false
		}
		if st.Holders == nil {
			st.Holders = map[string]int64{}
		}
		st.Holders[holder] = now.Add(lease).UnixNano()
		held = true
		return true
	})
	return held, err
}

// update applies change to key's entry and stores it, reading it again
// while another change comes first; change answers false when it has
// nothing to store.
func (g *Gate) update(ctx context.Context, key string, change func(*state) bool) error {
	for range tries {
		st, rev, err := g.read(ctx, key)
		if err != nil {
			return err
		}
		if !change(st) {
			return nil
		}
		if err := g.write(ctx, key, st, rev); !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
	}
	return fmt.Errorf("limits of %s: too many concurrent changes; the slot's lease ends it", key)
}

// admit changes st to let holder in at now and answers 0, or leaves it
// and answers how long to wait, and whether the cap (not the rate) is
// what holds it back.
func (st *state) admit(holder string, l Limits, lease time.Duration, now time.Time) (time.Duration, bool) {
	st.prune(now)
	if _, ok := st.Holders[holder]; ok {
		st.Holders[holder] = now.Add(lease).UnixNano()
		return 0, false
	}
	if l.MaxConcurrent > 0 && len(st.Holders) >= l.MaxConcurrent {
		return jitter(Busy), true
	}
	if l.Rate > 0 {
		// GCRA: a take is due every interval; up to Burst-1 of them may
		// come early.
		interval := time.Duration(float64(time.Second) / l.Rate)
		early := time.Duration(max(l.Burst, 1)-1) * interval
		tat := max(st.Next, now.UnixNano())
		if ahead := time.Duration(tat - now.UnixNano()); ahead > early {
			return ahead - early, false
		}
		st.Next = tat + int64(interval)
	}
	if l.MaxConcurrent > 0 {
		if st.Holders == nil {
			st.Holders = map[string]int64{}
		}
		st.Holders[holder] = now.Add(lease).UnixNano()
	}
	return 0, false
}

// prune drops the holders whose lease has ended: their worker is gone.
func (st *state) prune(now time.Time) {
	for h, until := range st.Holders {
		if until <= now.UnixNano() {
			delete(st.Holders, h)
		}
	}
}

func (g *Gate) read(ctx context.Context, key string) (*state, uint64, error) {
	e, err := g.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return &state{}, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("read the limits of %s: %w", key, err)
	}
	st := &state{}
	if err := json.Unmarshal(e.Value(), st); err != nil {
		// Not ours to read: start it afresh rather than hold the tool
		// for ever; the caps hold again from the next take.
		st = &state{}
	}
	return st, e.Revision(), nil
}

// write stores st as key's entry if it is still at rev (0: none yet);
// jetstream.ErrKeyExists when another change came first.
func (g *Gate) write(ctx context.Context, key string, st *state, rev uint64) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if rev == 0 {
		_, err = g.kv.Create(ctx, key, data)
	} else {
		_, err = g.kv.Update(ctx, key, data, rev)
	}
	return err
}

// jitter is d plus up to d more.
func jitter(d time.Duration) time.Duration { return d + rand.N(d) }
