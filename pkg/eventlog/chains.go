package eventlog

import (
	"context"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
)

// ChainIDs returns, sorted, the ids of the chains that hold an event of
// type typ: every schedule's for "schedule.created". The stream answers
// from its subject index, without reading the events.
func (l *Log) ChainIDs(ctx context.Context, typ string) ([]string, error) {
	info, err := l.stream.Info(ctx, jetstream.WithSubjectFilter(l.TypeFilter(typ)))
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "list the chains of %s", typ)
	}
	prefix, suffix := chainPrefix(l.cfg, typ)+".", "."+typ
	ids := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		ids = append(ids, strings.TrimSuffix(strings.TrimPrefix(subject, prefix), suffix))
	}
	slices.Sort(ids)
	return ids, nil
}

// ObjectiveSubject returns the wildcard over the subjects that hold an
// objective's events, one per type.
func (l *Log) ObjectiveSubject(id string) string { return l.cfg.ObjectivePrefix + "." + id + ".>" }

// ScheduleSubject returns the wildcard over the subjects that hold a
// schedule's events, one per type.
func (l *Log) ScheduleSubject(id string) string { return l.cfg.SchedulePrefix + "." + id + ".>" }

// RolloutSubject returns the wildcard over the subjects that hold a
// rollout's events, one per type.
func (l *Log) RolloutSubject(id string) string { return l.cfg.RolloutPrefix + "." + id + ".>" }
