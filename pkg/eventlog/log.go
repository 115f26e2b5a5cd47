// Package eventlog is Steward's event log over NATS JetStream: one stream,
// one subject per task (steward.task.<task_id>), appends conditional on the
// task's last sequence, deterministic message ids, and a hash chain per task
// (see pkg/event). It also runs the consumers that planes react through.
//
// Events are shared, not copied: an event handed to Append is the log's
// from then on, and the records reactions, follows (Follow, KeepReading)
// and reads of what is new (ReadAfter, EachAfter, ReadUpTo, Read*After)
// hand out are shared by every reader in the process and its writer
// (recent.go). Neither may be changed; race builds check. Read and the
// other whole-chain reads decode copies of their own.
//
// A *Log is safe for concurrent use.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Default names. They are part of the deployment contract: NATS
// permissions in clustered mode are written against them.
const (
	DefaultStream           = "STEWARD_EVENTS"
	DefaultSubjectPrefix    = "steward.task"
	DefaultToolPrefix       = "steward.tool"
	DefaultServicePrefix    = "steward.service"
	DefaultObjectivePrefix  = "steward.objective"
	DefaultSchedulePrefix   = "steward.schedule"
	DefaultRolloutPrefix    = "steward.rollout"
	DefaultDeadLetterStream = "STEWARD_DEADLETTER"
	DefaultDeadLetterPrefix = "steward.deadletter"
)

// HeaderType is set on every event, besides Nats-Msg-Id, so that people
// and tools reading the stream (the nats CLI) see the type without decoding.
// It is not hashed; Steward itself routes by the type inside the event.
const HeaderType = "Steward-Type"

// Config says where the log lives. The zero value is filled with defaults.
type Config struct {
	Stream        string
	SubjectPrefix string
	// ToolPrefix is where tool registrations live: steward.tool.<name>.
	ToolPrefix string
	// ServicePrefix is where service-wide facts, such as circuit breaker
	// changes, live: steward.service.<key>.
	ServicePrefix string
	// ObjectivePrefix is where objectives live, a chain each:
	// steward.objective.<objective_id>.<type>.
	ObjectivePrefix string
	// SchedulePrefix is where schedules live, a chain each:
	// steward.schedule.<schedule_id>.<type>.
	SchedulePrefix string
	// RolloutPrefix is where rollouts live: steward.rollout.<id>.<type>.
	RolloutPrefix    string
	DeadLetterStream string
	DeadLetterPrefix string
	// Replicas of the streams when Open creates them; 1 for a single
	// server, 3 for a cluster.
	Replicas int
	// Storage is file storage unless set to jetstream.MemoryStorage.
	Storage jetstream.StorageType
	// DuplicateWindow bounds how long a retried append is recognised by
	// its message id alone. Default two minutes.
	DuplicateWindow time.Duration
	Logger          *slog.Logger
	// SoleConsumer says this process is the only one that reads its
	// durable consumers (steward dev). React then resets a consumer to its
	// ack floor as it starts, so that what a crashed predecessor had in
	// hand comes again at once, not after the ack wait, and a stop cuts
	// its fetch rather than wait for it (pull.go). Never set it where
	// processes share a consumer: a live one's events would come again.
	SoleConsumer bool
	// HardenBuckets: as stores.Config.Harden, for the first-use bucket.
	HardenBuckets bool
	// Writers, by plane, are the connections appends go through: an
	// event goes through its type's owner's (event.Owner). steward dev
	// runs every plane over one Log and gives each its own NATS user
	// (pkg/natsperm), so that the server's permissions hold inside one
	// process too. Reads, consumers and everything else, and an event
	// whose owner has no writer, use the connection Open was given.
	Writers map[string]jetstream.JetStream
	// Tracing records the spans of reactions to traced events (tracer.go);
	// nil records none.
	Tracing trace.TracerProvider
}

func (c Config) withDefaults() Config {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = DefaultSubjectPrefix
	}
	if c.ToolPrefix == "" {
		c.ToolPrefix = DefaultToolPrefix
	}
	if c.ServicePrefix == "" {
		c.ServicePrefix = DefaultServicePrefix
	}
	if c.ObjectivePrefix == "" {
		c.ObjectivePrefix = DefaultObjectivePrefix
	}
	if c.SchedulePrefix == "" {
		c.SchedulePrefix = DefaultSchedulePrefix
	}
	if c.RolloutPrefix == "" {
		c.RolloutPrefix = DefaultRolloutPrefix
	}
	if c.DeadLetterStream == "" {
		c.DeadLetterStream = DefaultDeadLetterStream
	}
	if c.DeadLetterPrefix == "" {
		c.DeadLetterPrefix = DefaultDeadLetterPrefix
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Log is the event log.
type Log struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	cfg    Config
	// maxPayload is the largest message the server takes.
	maxPayload int
	firstUse   firstUses
	// replicated says the event stream has followers, whose direct gets
	// may lag: heads and misses are then the leader's (consistent.go).
	replicated bool
	// lasts shares the lookups of the last event on a filter (shared.go).
	lasts sharedLookups
	// recent is the events this process wrote or opened last, decoded,
	// for its other readers (recent.go).
	recent recentEvents
}

// Open makes sure the event and dead-letter streams exist and returns the
// log. A missing stream is created with the configuration Steward needs;
// an existing one is used as it is — an operator's changes (more replicas,
// other limits) are never rewritten — and a replica count that differs from
// cfg is logged. Every plane calls Open at start; it is idempotent.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Log, error) {
	cfg = cfg.withDefaults()
	stream, err := ensureStream(ctx, js, cfg, jetstream.StreamConfig{
		Name:        cfg.Stream,
		Description: "Steward events; one chain per task, tool, service, objective, schedule and rollout",
		Subjects: []string{cfg.SubjectPrefix + ".>", cfg.ToolPrefix + ".>", cfg.ServicePrefix + ".>",
			cfg.ObjectivePrefix + ".>", cfg.SchedulePrefix + ".>", cfg.RolloutPrefix + ".>"},
		Storage:     cfg.Storage,
		Replicas:    cfg.Replicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew, // never drop history to make room
		Duplicates:  cfg.DuplicateWindow,
		AllowDirect: true, // reads of one task's history from any replica (consistent.go)
		DenyDelete:  true,
		DenyPurge:   false, // archived tasks leave by purge (docs/archives.md); natsperm refuses it to every plane
	})
	if err != nil {
		return nil, err
	}
	// One message per subject: setting a message aside is idempotent
	// across readers and restarts (see setAside).
	_, err = ensureStream(ctx, js, cfg, jetstream.StreamConfig{
		Name:                 cfg.DeadLetterStream,
		Description:          "Steward messages set aside because they could not be decoded or processed",
		Subjects:             []string{cfg.DeadLetterPrefix + ".>"},
		Storage:              cfg.Storage,
		Replicas:             cfg.Replicas,
		Duplicates:           cfg.DuplicateWindow,
		MaxMsgsPerSubject:    1,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
	})
	if err != nil {
		return nil, err
	}
	maxPayload := int(js.Conn().MaxPayload())
	if maxPayload <= 0 {
		maxPayload = 1 << 20
	}
	replicated := stream.CachedInfo().Config.Replicas > 1
	return &Log{js: js, stream: stream, cfg: cfg, maxPayload: maxPayload, replicated: replicated}, nil
}

func ensureStream(ctx context.Context, js jetstream.JetStream, cfg Config, want jetstream.StreamConfig) (jetstream.Stream, error) {
	stream, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			stream, err = js.Stream(ctx, want.Name) // another plane created it first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", want.Name, err)
	}
	// Subjects are Steward's own contract: a newer version may add some,
	// and an older stream gets them. Nothing else is touched.
	have := stream.CachedInfo().Config
	if missing := missingSubjects(have.Subjects, want.Subjects); len(missing) > 0 {
		have.Subjects = append(have.Subjects, missing...)
		if stream, err = js.UpdateStream(ctx, have); err != nil {
			return nil, fmt.Errorf("add subjects %v to stream %s: %w", missing, want.Name, err)
		}
	}
	bucket.WarnReplicas(cfg.Logger, want.Name, stream.CachedInfo().Config.Replicas, want.Replicas)
	return stream, nil
}

func missingSubjects(have, want []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// Config returns the log's configuration with defaults filled in.
func (l *Log) Config() Config { return l.cfg }

// Each event is stored on a subject of its own type under its chain's:
// steward.task.<task_id>.<type> (and steward.tool.<name>.<type>,
// steward.service.<key>.<type>, steward.objective.<id>.<type>,
// steward.schedule.<id>.<type>), so that a consumer can take only the
// types it reacts to, and NATS can tell who may publish what. A chain —
// a task's events, a tool's, a service's, an objective's, a schedule's —
// is the wildcard over its types, and appends to it are conditional on
// its last sequence across all of them. An objective's or a schedule's
// events carry its id where a task's carry the task's (Event.task_id).

// Subject returns the wildcard over the subjects that hold taskID's
// events, one per type.
func (l *Log) Subject(taskID string) string { return l.cfg.SubjectPrefix + "." + taskID + ".>" }

// TaskSubject returns the subject that holds taskID's events of type typ.
func (l *Log) TaskSubject(taskID, typ string) string {
	return l.cfg.SubjectPrefix + "." + taskID + "." + typ
}

// TypeFilter returns the wildcard over every chain's events of type typ:
// every task's, or every objective's or schedule's for their types.
func (l *Log) TypeFilter(typ string) string { return chainPrefix(l.cfg, typ) + ".*." + typ }

// ToolSubject returns the wildcard over the subjects that hold the
// registrations of a tool: the global ones and every tenant's of that
// name, one chain, so that one conditional append decides whether a name
// is global or a tenant's.
func (l *Log) ToolSubject(name string) string { return l.cfg.ToolPrefix + "." + name + ".>" }

// ServiceSubject returns the wildcard over the subjects that hold a
// service's events: tenant's breakers for a tenant's tools, the global
// ones for tenant "".
func (l *Log) ServiceSubject(tenant, key string) string {
	return l.cfg.ServicePrefix + "." + tenantDot(tenant) + key + ".>"
}

// tenantDot is tenant's subject token and a dot, or nothing for the
// default tenant.
func tenantDot(tenant string) string {
	if tenant == "" {
		return ""
	}
	return TenantToken(tenant) + "."
}

// chainOf returns the part of subject that names its chain — a task's,
// a tool's or a service's — without the type, which may span several
// tokens (task.created): every type of one task shares a reaction lane,
// so a task's events are handled in the order they were appended. A
// tenant's service chain spans its tenant token and its key.
func (l *Log) chainOf(subject string) string {
	for _, prefix := range []string{l.cfg.SubjectPrefix, l.cfg.ToolPrefix, l.cfg.ServicePrefix, l.cfg.ObjectivePrefix, l.cfg.SchedulePrefix, l.cfg.RolloutPrefix} {
		rest, ok := strings.CutPrefix(subject, prefix+".")
		if !ok {
			continue
		}
		skip := 0
		if prefix == l.cfg.ServicePrefix && strings.HasPrefix(rest, "=") {
			if j := strings.IndexByte(rest, '.'); j >= 0 {
				skip = j + 1
			}
		}
		if i := strings.IndexByte(rest[skip:], '.'); i >= 0 {
			return subject[:len(prefix)+1+skip+i]
		}
	}
	return subject
}

// subjectOf returns the subject ev belongs on, and the wildcard over its
// chain: its tool's for a tool registration, its service's for a breaker
// change, its task's for everything else. A tenant's tool registration
// is on steward.tool.<name>.=<tenant>.<type>, in the chain of the name;
// a tenant's breaker change on steward.service.=<tenant>.<key>.<type>, a
// chain of its own (TenantToken).
func (l *Log) subjectOf(ev *stewardv1.Event) (subject, chain string, err error) {
	// The type is the payload's, which the hash covers, never a label.
	typ := event.TypeOf(ev)
	if typ == "" {
		return "", "", errs.New(errs.Invalid, "event %s has no payload of a known type", errs.Quote(ev.EventId))
	}
	prefix := chainPrefix(l.cfg, typ)
	switch {
	case ev.GetBreakerChanged() != nil:
		c := ev.GetBreakerChanged()
		if err := CheckServiceKey("service_key", c.ServiceKey); err != nil {
			return "", "", err
		}
		chain := prefix + "." + tenantDot(c.Tenant) + c.ServiceKey
		return chain + "." + typ, chain + ".>", nil
	case ev.GetToolRegistered() != nil:
		reg := ev.GetToolRegistered()
		name := reg.GetContract().GetName()
		if !ValidTaskID(name) {
			return "", "", errs.Field("contract.name", "%s is not a tool name: want 1-64 letters, digits, '-' or '_'", errs.Quote(name))
		}
		chain := prefix + "." + name
		return chain + "." + tenantDot(reg.Tenant) + typ, chain + ".>", nil
	}
	if !ValidTaskID(ev.TaskId) {
		return "", "", errs.Wrap(errs.Invalid, ErrInvalidTaskID, "append")
	}
	return prefix + "." + ev.TaskId + "." + typ, prefix + "." + ev.TaskId + ".>", nil
}

// AppendSubjects returns the subjects, as NATS wildcards in the default
// configuration, that Append writes events of type typ on: a task's for
// most types; a tool's or a service's, global or a tenant's, for a tool
// registration or a breaker change. The NATS permissions (pkg/natsperm)
// are built from it, so that they name exactly those subjects.
func AppendSubjects(typ string) []string {
	prefix := ChainPrefix(typ)
	switch typ {
	case event.TypeBreakerChanged, event.TypeToolRegistered:
		return []string{prefix + ".*." + typ, prefix + ".*.*." + typ}
	}
	return []string{prefix + ".*." + typ}
}

// ChainPrefix returns the subject prefix, in the default configuration,
// of the chains that hold events of type typ: a tool's for a tool
// registration, a service's for a breaker change, an objective's or a
// schedule's for their types ("objective.…", "schedule.…"), a task's for
// every other type.
func ChainPrefix(typ string) string { return chainPrefix(Config{}.withDefaults(), typ) }

func chainPrefix(c Config, typ string) string {
	switch typ {
	case event.TypeBreakerChanged:
		return c.ServicePrefix
	case event.TypeToolRegistered:
		return c.ToolPrefix
	}
	switch kind, _, _ := strings.Cut(typ, "."); kind {
	case "objective":
		return c.ObjectivePrefix
	case "schedule":
		return c.SchedulePrefix
	case "rollout":
		return c.RolloutPrefix
	}
	return c.SubjectPrefix
}
