package timer

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
)

// migrate moves owner's timers out of the stream every owner shared
// before each had its own (Config.Stream, subjects p.at.> and p.fired.>):
// a pending schedule is set again in owner's stream for its time, and a
// timer that fired there but that no consumer acknowledged is set again
// to fire at once. Set's rule — one timer per (kind, id) while pending or
// fired within FiredRetention — makes this idempotent, so it runs each
// time a process first opens owner's stream and deletes nothing (planes
// may not). The shared stream's schedules still fire into it, where
// nobody reads them; an operator removes it a day after the upgrade
// (docs/nats.md).
//
// It reports whether the shared stream is there. A fired timer that came
// due before firedAfter (if set) is left alone: see sweep.
func (t *Timers) migrate(ctx context.Context, owner string, firedAfter time.Time) (bool, error) {
	shared, err := t.js.Stream(ctx, t.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return false, nil
	}
	if err != nil {
		return false, errs.Wrap(errs.Unavailable, err, "open the shared timer stream %s", t.cfg.Stream)
	}
	handled, err := acknowledged(ctx, shared)
	if err != nil {
		return true, err
	}
	// What owner's stream holds already, a schedule or a fired timer, is
	// not set again: no read, no publish the server would refuse. That
	// keeps a sweep (below) cheap while the shared stream keeps timers.
	ownName := Stream(t.cfg.Stream, owner)
	ownPrefix := t.cfg.Prefix + "." + owner + "."
	own, err := t.js.Stream(ctx, ownName)
	if err != nil {
		return true, errs.Wrap(errs.Unavailable, err, "open timer stream %s", ownName)
	}
	ownInfo, err := own.Info(ctx, jetstream.WithSubjectFilter(ownPrefix+">"))
	if err != nil {
		return true, errs.Wrap(errs.Unavailable, err, "list the timers in %s", ownName)
	}
	there := map[string]bool{} // by "<kind>.<token>"
	for subj := range ownInfo.State.Subjects {
		if _, kindToken, ok := strings.Cut(strings.TrimPrefix(subj, ownPrefix), "."); ok {
			there[kindToken] = true
		}
	}
	moved := 0
	for _, stage := range []string{"at", "fired"} {
		info, err := shared.Info(ctx, jetstream.WithSubjectFilter(t.cfg.Prefix+"."+stage+"."+owner+".>"))
		if err != nil {
			return true, errs.Wrap(errs.Unavailable, err, "list %s's timers in %s", owner, t.cfg.Stream)
		}
		for subj := range info.State.Subjects {
			if there[strings.TrimPrefix(subj, t.cfg.Prefix+"."+stage+".")] {
				continue
			}
			msg, err := shared.GetLastMsgForSubject(ctx, subj)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue // fired or expired meanwhile
			}
			if err != nil {
				return true, errs.Wrap(errs.Unavailable, err, "read %s in %s", subj, t.cfg.Stream)
			}
			if stage == "fired" && (handled(subj, msg.Sequence) || msg.Time.Before(firedAfter)) {
				continue
			}
			kind, id := msg.Header.Get(HeaderKind), msg.Header.Get(HeaderID)
			at, err := time.Parse(time.RFC3339Nano, msg.Header.Get(HeaderAt))
			if err != nil || checkKind(kind) != nil || checkID(id) != nil || Owner(kind) != owner ||
				subj != t.sharedSubject(stage, kind, id) ||
				stage == "fired" && msg.Header.Get(jetstream.SchedulerHeader) != t.sharedSubject("at", kind, id) {
				t.cfg.Logger.Warn("shared timer stream: a message Set did not make; leaving it", "stream", t.cfg.Stream, "subject", subj)
				continue
			}
			stored, err := t.store(ctx, kind, id, at, msg.Data)
			if err != nil {
				return true, err
			}
			if stored {
				moved++
			}
		}
	}
	if moved > 0 {
		t.cfg.Logger.Info("moved timers from the shared timer stream to their owner's",
			"owner", owner, "from", t.cfg.Stream, "to", Stream(t.cfg.Stream, owner), "timers", moved)
	}
	return true, nil
}

// sweep moves owner's timers out of the shared stream again every
// Config.sweepEvery until ctx ends or an operator removes the stream. In a
// rolling upgrade a process of the earlier version still runs after this
// one first opened owner's stream: a timer it sets in the shared stream
// then, or one it hands back as it stops, would otherwise wait there, read
// by nobody, until this process restarts.
//
// A sweep leaves alone timers that fired in the shared stream more than
// half of FiredRetention ago: earlier sweeps took them, and one that fired
// there at the same time as its moved copy could otherwise, taken by a
// sweep just after the copy expired, fire a third time.
func (t *Timers) sweep(ctx context.Context, owner string) {
	tick := time.NewTicker(t.cfg.sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		shared, err := t.migrate(ctx, owner, time.Now().Add(-FiredRetention/2))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			t.cfg.Logger.Warn("shared timer stream: moving timers failed; will try again", "owner", owner, "err", err)
		case !shared:
			return
		}
	}
}

// sharedSubject is where (kind, id) was in the shared stream.
func (t *Timers) sharedSubject(stage, kind, id string) string {
	return t.cfg.Prefix + "." + stage + "." + kind + "." + idToken(id)
}

// acknowledged returns whether the message at seq on subject is below the
// acknowledgement floor of a durable consumer of stream that reads
// subject: handled, and not to fire again. One acknowledged out of order
// above the floor fires again, which handlers allow (Handler).
func acknowledged(ctx context.Context, stream jetstream.Stream) (func(subject string, seq uint64) bool, error) {
	type floor struct {
		filters []string
		seq     uint64
	}
	var floors []floor
	infos := stream.ListConsumers(ctx)
	for info := range infos.Info() {
		f := floor{filters: info.Config.FilterSubjects, seq: info.AckFloor.Stream}
		if info.Config.FilterSubject != "" {
			f.filters = append(f.filters, info.Config.FilterSubject)
		}
		if len(f.filters) == 0 {
			f.filters = []string{">"}
		}
		floors = append(floors, f)
	}
	if err := infos.Err(); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "list the consumers of %s", stream.CachedInfo().Config.Name)
	}
	return func(subject string, seq uint64) bool {
		for _, f := range floors {
			for _, filter := range f.filters {
				if seq <= f.seq && matches(filter, subject) {
					return true
				}
			}
		}
		return false
	}, nil
}

// matches reports whether a NATS subject filter (with * and >) takes
// subject.
func matches(filter, subject string) bool {
	fs, ss := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, f := range fs {
		switch {
		case f == ">":
			return len(ss) > i
		case i >= len(ss):
			return false
		case f != "*" && f != ss[i]:
			return false
		}
	}
	return len(fs) == len(ss)
}
