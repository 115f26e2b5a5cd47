package archive

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// ErrLogRefusesPurges is PurgeTask's answer on a log created before
// archiving existed: JetStream cannot lift a stream's DenyPurge, so such a
// log is copied into a new stream first (docs/archives.md).
var ErrLogRefusesPurges = errors.New("the log was created refusing purges, which JetStream cannot lift: copy it into a new stream to archive from it (docs/archives.md)")

// Purger removes what was archived from the hot streams, as the NATS
// user natsperm.Archiver, which may purge and nothing else that writes.
// A Purger is for one goroutine.
type Purger struct {
	js       jetstream.JetStream
	refusing map[string]bool // content buckets seen refusing purges
}

// NewPurger returns a Purger over js.
func NewPurger(js jetstream.JetStream) *Purger {
	return &Purger{js: js, refusing: map[string]bool{}}
}

// Held is what the archive holds of one task: how many of its events,
// the newest at sequence Last.
type Held struct {
	TaskID string
	Events uint64
	Last   uint64
}

// HeldIn returns what b holds of each of its tasks, by id.
func HeldIn(b *stewardv1.AuditBundle) []Held {
	by := map[string]*Held{}
	var out []*Held
	for _, bt := range b.Tasks {
		h := by[bt.TaskId]
		if h == nil {
			h = &Held{TaskID: bt.TaskId}
			by[bt.TaskId] = h
			out = append(out, h)
		}
		for _, e := range bt.Events {
			h.Events++
			h.Last = max(h.Last, e.Sequence)
		}
	}
	held := make([]Held, len(out))
	for i, h := range out {
		held[i] = *h
	}
	return held
}

// ErrChanged is PurgeTree's answer when the log holds events of a task
// the archive does not: one appended after its bundle was read.
var ErrChanged = errors.New("the log holds events of the task its archived bundle does not")

// PurgeTree removes from the log the events of each task the archive
// holds, and returns how many were removed. Nothing is purged unless the
// log holds exactly what the archive does of every task; and each purge
// stops below the archive's newest event, so an event appended meanwhile
// stays on the log (and is an error: ErrChanged).
func (p *Purger) PurgeTree(ctx context.Context, tasks []Held) (uint64, error) {
	s, err := p.js.Stream(ctx, eventlog.DefaultStream)
	if err != nil {
		return 0, err
	}
	if s.CachedInfo().Config.DenyPurge {
		return 0, ErrLogRefusesPurges
	}
	for _, h := range tasks {
		if !eventlog.ValidTaskID(h.TaskID) {
			return 0, fmt.Errorf("purge: %q is not a task id", h.TaskID)
		}
		n, err := p.count(ctx, s, taskSubjects(h.TaskID))
		if err != nil {
			return 0, err
		}
		if n != h.Events {
			return 0, fmt.Errorf("purge task %s: the log holds %d events, the archive %d: %w", h.TaskID, n, h.Events, ErrChanged)
		}
	}
	var purged uint64
	for _, h := range tasks {
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(taskSubjects(h.TaskID)), jetstream.WithPurgeSequence(h.Last+1)); err != nil {
			return purged, fmt.Errorf("purge task %s: %w", h.TaskID, err)
		}
		left, err := p.count(ctx, s, taskSubjects(h.TaskID))
		if err != nil {
			return purged, err
		}
		purged += h.Events - min(left, h.Events)
		if left > 0 {
			return purged, fmt.Errorf("purge task %s: %d events appended after archiving stay on the log: %w", h.TaskID, left, ErrChanged)
		}
	}
	return purged, nil
}

// taskSubjects are all of a task's events' subjects.
func taskSubjects(taskID string) string { return eventlog.DefaultSubjectPrefix + "." + taskID + ".>" }

// count is how many messages s holds on subject.
func (p *Purger) count(ctx context.Context, s jetstream.Stream, subject string) (uint64, error) {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}
