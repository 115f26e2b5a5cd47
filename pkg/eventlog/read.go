package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Raw is an event exactly as stored, for auditors who check the bytes.
type Raw struct {
	Sequence uint64
	// Subject is where it is stored: its chain's, and its type's.
	Subject string
	Data    []byte
}

// ReadRaw returns every stored event of taskID, unverified, in order. A
// task with no events yields an empty slice.
func (l *Log) ReadRaw(ctx context.Context, taskID string) ([]Raw, error) {
	var out []Raw
	err := l.EachRaw(ctx, taskID, func(r Raw) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// EachRaw calls fn with every stored event of taskID, unverified, in
// order, one read at a time, until fn returns an error: a reader of a long
// history holds one event of it at a time.
func (l *Log) EachRaw(ctx context.Context, taskID string, fn func(Raw) error) error {
	if !ValidTaskID(taskID) {
		return errs.Wrap(errs.Invalid, ErrInvalidTaskID, "read")
	}
	return l.scan(ctx, l.Subject(taskID), 1, func(seq uint64, subject string, data []byte) error {
		return fn(Raw{Sequence: seq, Subject: subject, Data: data})
	})
}

func (l *Log) readRaw(ctx context.Context, subject string) ([]Raw, error) {
	var out []Raw
	err := l.scan(ctx, subject, 1, func(seq uint64, subject string, data []byte) error {
		out = append(out, Raw{Sequence: seq, Subject: subject, Data: data})
		return nil
	})
	return out, err
}

// Read returns every event of taskID in order, each checked against the
// task's hash chain. A chain break is a Corrupt error wrapping the
// *event.BreakError that names the event.
func (l *Log) Read(ctx context.Context, taskID string) ([]*stewardv1.EventRecord, error) {
	raws, err := l.ReadRaw(ctx, taskID)
	if err != nil {
		return nil, err
	}
	return l.verify(l.Subject(taskID), taskID, raws)
}

// ReadTool returns every registration of the named tool, in order, each
// checked against the tool subject's hash chain.
func (l *Log) ReadTool(ctx context.Context, name string) ([]*stewardv1.EventRecord, error) {
	if !ValidTaskID(name) {
		return nil, errs.Field("name", "%s is not a tool name", errs.Quote(name))
	}
	return l.readChain(ctx, l.ToolSubject(name))
}

// ReadToolRaw returns a tool's registrations exactly as stored, unchecked:
// an auditor's bundle carries the bytes (AuditService.ExportBundle).
func (l *Log) ReadToolRaw(ctx context.Context, name string) ([]Raw, error) {
	if !ValidTaskID(name) {
		return nil, errs.Field("name", "%s is not a tool name", errs.Quote(name))
	}
	return l.readRaw(ctx, l.ToolSubject(name))
}

// ReadObjective returns every event of objective id in order, each checked
// against the objective's hash chain.
func (l *Log) ReadObjective(ctx context.Context, id string) ([]*stewardv1.EventRecord, error) {
	return l.readRecord(ctx, "objective_id", id, l.ObjectiveSubject)
}

// ReadSchedule returns every event of schedule id in order, each checked
// against the schedule's hash chain.
func (l *Log) ReadSchedule(ctx context.Context, id string) ([]*stewardv1.EventRecord, error) {
	return l.readRecord(ctx, "schedule_id", id, l.ScheduleSubject)
}

// ReadRollout returns every event of rollout id in order, each checked
// against the rollout's hash chain.
func (l *Log) ReadRollout(ctx context.Context, id string) ([]*stewardv1.EventRecord, error) {
	return l.readRecord(ctx, "rollout_id", id, l.RolloutSubject)
}

// ReadScheduleEvents returns schedule id's events of type typ, in order,
// each checked against its own hash and subject but not linked to the
// rest of the chain: for a reader that needs one type on every call (a
// run's check for its schedule's revoked credential, before each action),
// which then reads one subject rather than every firing.
func (l *Log) ReadScheduleEvents(ctx context.Context, id, typ string) ([]*stewardv1.EventRecord, error) {
	return l.readEach(ctx, "schedule_id", id, l.cfg.SchedulePrefix+"."+id+"."+typ, 0)
}

// ReadObjectiveAfter returns the events of objective id stored after
// stream sequence after, in order, each checked against its own hash and
// subject; linking them to the events before is the caller's part, as
// for ReadAfter: a reader that keeps an objective folded reads only what
// is new.
func (l *Log) ReadObjectiveAfter(ctx context.Context, id string, after uint64) ([]*stewardv1.EventRecord, error) {
	return l.readEach(ctx, "objective_id", id, l.ObjectiveSubject(id), after)
}

// ReadScheduleAfter is ReadObjectiveAfter for schedule id.
func (l *Log) ReadScheduleAfter(ctx context.Context, id string, after uint64) ([]*stewardv1.EventRecord, error) {
	return l.readEach(ctx, "schedule_id", id, l.ScheduleSubject(id), after)
}

// ReadRolloutAfter is ReadObjectiveAfter for rollout id.
func (l *Log) ReadRolloutAfter(ctx context.Context, id string, after uint64) ([]*stewardv1.EventRecord, error) {
	return l.readEach(ctx, "rollout_id", id, l.RolloutSubject(id), after)
}

// readEach returns the events on subject, of an objective or a schedule
// named id, stored after stream sequence after, each checked against its
// own hash and subject but not linked to the events before it.
func (l *Log) readEach(ctx context.Context, field, id, subject string, after uint64) ([]*stewardv1.EventRecord, error) {
	if !ValidTaskID(id) {
		return nil, errs.Field(field, "%s is not an id: want 1-64 letters, digits, '-' or '_'", errs.Quote(id))
	}
	var out []*stewardv1.EventRecord
	err := l.eachOn(ctx, subject, after, func(rec *stewardv1.EventRecord) error {
		out = append(out, rec)
		return nil
	})
	return out, err
}

// readRecord reads the chain of an objective or a schedule, whose events
// carry its id as a task's carry the task's.
func (l *Log) readRecord(ctx context.Context, field, id string, subject func(string) string) ([]*stewardv1.EventRecord, error) {
	if !ValidTaskID(id) {
		return nil, errs.Field(field, "%s is not an id: want 1-64 letters, digits, '-' or '_'", errs.Quote(id))
	}
	raws, err := l.readRaw(ctx, subject(id))
	if err != nil {
		return nil, err
	}
	return l.verify(subject(id), id, raws)
}

// readChain reads a subject that holds no task (a tool's, a service's),
// checked against its hash chain.
func (l *Log) readChain(ctx context.Context, subject string) ([]*stewardv1.EventRecord, error) {
	raws, err := l.readRaw(ctx, subject)
	if err != nil {
		return nil, err
	}
	return l.verify(subject, "", raws)
}

// verify checks raws as one chain, the events stored under subject (a
// wildcard), each on its own type's subject.
func (l *Log) verify(subject, taskID string, raws []Raw) ([]*stewardv1.EventRecord, error) {
	chain := event.Chain{TaskID: taskID}
	out := make([]*stewardv1.EventRecord, 0, len(raws))
	for _, r := range raws {
		ev, err := chain.Next(r.Data)
		if err == nil && r.Subject != l.mustSubjectOf(ev) {
			err = fmt.Errorf("event %s belongs on %s, not %s", ev.EventId, l.mustSubjectOf(ev), r.Subject)
		}
		if err != nil {
			return nil, errs.Wrap(errs.Corrupt, err, "%s", subject)
		}
		out = append(out, &stewardv1.EventRecord{Sequence: r.Sequence, Event: ev})
	}
	return out, nil
}

// ReadAfter returns the events of taskID stored after stream sequence
// after, in order, each checked against its own hash and subject. Linking
// them to the events before is the caller's part: the fold checks each
// event's prev_hash against the head it already has.
func (l *Log) ReadAfter(ctx context.Context, taskID string, after uint64) ([]*stewardv1.EventRecord, error) {
	var out []*stewardv1.EventRecord
	err := l.EachAfter(ctx, taskID, after, func(rec *stewardv1.EventRecord) error {
		out = append(out, rec)
		return nil
	})
	return out, err
}

// EachAfter calls fn with each event ReadAfter returns, one read at a
// time, until fn returns an error.
func (l *Log) EachAfter(ctx context.Context, taskID string, after uint64, fn func(*stewardv1.EventRecord) error) error {
	if !ValidTaskID(taskID) {
		return errs.Wrap(errs.Invalid, ErrInvalidTaskID, "read")
	}
	return l.eachOn(ctx, l.Subject(taskID), after, fn)
}

// record decodes the event stored at seq on subject and checks it against
// its own hash and subject (open: the record is shared, read-only).
func (l *Log) record(seq uint64, subject string, data []byte) (*stewardv1.EventRecord, error) {
	rec, err := l.open(seq, subject, data)
	if errors.Is(err, event.ErrUnknownType) {
		// Not corrupt: a newer build's, which a newer plane reads; a
		// reaction reading it waits for one (Unavailable redelivers).
		return nil, errs.Wrap(errs.Unavailable, err, "%s: event %d", subject, seq)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "%s: event %d", subject, seq)
	}
	return rec, nil
}

// LastSequence returns the stream sequence of taskID's last event, or 0
// when the task has none.
func (l *Log) LastSequence(ctx context.Context, taskID string) (uint64, error) {
	if !ValidTaskID(taskID) {
		return 0, errs.Wrap(errs.Invalid, ErrInvalidTaskID, "read")
	}
	return l.lastOn(ctx, l.Subject(taskID))
}

// LastTaskSequence returns the sequence of the last task event of any
// task, or 0 when there is none: where a projection of all tasks must
// reach to be current.
func (l *Log) LastTaskSequence(ctx context.Context) (uint64, error) {
	return l.lastOfAll(ctx, l.cfg.SubjectPrefix+".>")
}

// LastOfTypes returns the sequence of the last task event of any of the
// given types, or 0 when there is none: where a reader of those types
// (KeepReadingTypes) must reach to be current.
func (l *Log) LastOfTypes(ctx context.Context, types ...string) (uint64, error) {
	var last uint64
	for _, f := range l.typeFilters(types) {
		seq, err := l.lastOfAll(ctx, f)
		if err != nil {
			return 0, err
		}
		last = max(last, seq)
	}
	return last, nil
}

// LastToolSequence is LastTaskSequence for tool registrations.
func (l *Log) LastToolSequence(ctx context.Context) (uint64, error) {
	return l.lastOfAll(ctx, l.cfg.ToolPrefix+".>")
}

// lastOfAll is lastOn for a filter over many chains (every task's, every
// tool's): from a lookup begun after the call, shared with the callers
// asking at the same time, as the server walks every subject it matches
// (shared.go).
func (l *Log) lastOfAll(ctx context.Context, filter string) (uint64, error) {
	return l.lasts.last(ctx, filter, l.lastOn)
}

func (l *Log) lastOn(ctx context.Context, filter string) (uint64, error) {
	msg, err := l.last(ctx, filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, errs.Wrap(errs.Unavailable, err, "read %s", filter)
	}
	return msg.seq, nil
}

// decode opens an event read from subject and checks that it belongs
// there: an event sealed for one task (or tool) and stored under another's
// subject is refused.
func (l *Log) decode(subject string, data []byte) (*stewardv1.Event, error) {
	ev, err := event.Open(data)
	if errors.Is(err, event.ErrUnknownType) {
		// Its envelope says whose it is (NewerEvent), and where it
		// belongs as far as this build can tell: misfiled, it is refused
		// as any other would be, not left for a newer build for ever.
		if !storedAsNamed(subject, ev) {
			return nil, fmt.Errorf("event %s of task %s, type %s, was stored under %s", ev.EventId, errs.Quote(ev.TaskId), ev.Type, subject)
		}
		return ev, err
	}
	if err != nil {
		return nil, err
	}
	if want, _, _ := l.subjectOf(ev); subject != want {
		return nil, fmt.Errorf("event %s belongs on %s but was stored under %s", ev.EventId, want, subject)
	}
	return ev, nil
}

// storedAsNamed reports whether subject ends as an event of a type this
// build does not know must: in its type, after its task's id if it names
// a task (a newer kind of chain may not).
func storedAsNamed(subject string, ev *stewardv1.Event) bool {
	want := "." + ev.Type
	if ev.TaskId != "" {
		want = "." + ev.TaskId + want
	}
	return strings.HasSuffix(subject, want)
}

// mustSubjectOf is subjectOf for events already stored, where an invalid
// id simply matches no subject.
func (l *Log) mustSubjectOf(ev *stewardv1.Event) string {
	s, _, err := l.subjectOf(ev)
	if err != nil {
		return "(invalid: " + err.Error() + ")"
	}
	return s
}
