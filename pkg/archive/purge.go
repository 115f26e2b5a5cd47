package archive

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/eventlog"
)

// ErrLogRefusesPurges is PurgeTask's answer on a log created before
// archiving existed: JetStream cannot lift a stream's DenyPurge, so such a
// log is copied into a new stream first (docs/archives.md).
var ErrLogRefusesPurges = errors.New("the log was created refusing purges, which JetStream cannot lift: copy it into a new stream to archive from it (docs/archives.md)")

// Purger removes what was archived from the hot streams, as the NATS
// user natsperm.Archiver, which may purge and nothing else that writes.
type Purger struct {
	js jetstream.JetStream
}

// NewPurger returns a Purger over js.
func NewPurger(js jetstream.JetStream) *Purger { return &Purger{js: js} }

// PurgeTask removes every event of taskID from the log (all its types'
// subjects) and returns how many were removed.
func (p *Purger) PurgeTask(ctx context.Context, taskID string) (uint64, error) {
	if !eventlog.ValidTaskID(taskID) {
		return 0, fmt.Errorf("purge: %q is not a task id", taskID)
	}
	s, err := p.js.Stream(ctx, eventlog.DefaultStream)
	if err != nil {
		return 0, err
	}
	if s.CachedInfo().Config.DenyPurge {
		return 0, ErrLogRefusesPurges
	}
	before, err := p.count(ctx, s, eventlog.DefaultSubjectPrefix+"."+taskID+".>")
	if err != nil {
		return 0, err
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(eventlog.DefaultSubjectPrefix+"."+taskID+".>")); err != nil {
		return 0, fmt.Errorf("purge task %s: %w", taskID, err)
	}
	return before, nil
}

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
