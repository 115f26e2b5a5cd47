// Package natsperm is the one table of what each plane's NATS user may do:
// publish the events of the types it owns and nothing else, write only the
// buckets and timers it owns, call only the JetStream API it uses, and read
// replies only on its own inbox. DESIGN rule 3 says only the owning plane
// publishes a type; the fold refuses a stranger's event, and these
// permissions make the server refuse it before it is stored — so a plane,
// or whoever holds its key, cannot forge a permit, a policy decision, an
// approval or an outcome.
//
// The table is derived from code, not written out: event subjects come
// from the ownership table (event.Owner) and the log's subject layout
// (eventlog.AppendSubjects), so a new event type is covered by the plane that
// owns it. `steward dev` gives its embedded server these users; serve
// deployments write them into their NATS configuration. docs/nats.md is
// checked against Markdown.
//
// Everything here is a pure function of the code; it is safe for
// concurrent use.
package natsperm

import (
	"slices"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/backup"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/timer"
)

// ToolKVBucket is the bucket the kv.append built-in tool writes to: the
// execution plane's alone.
const ToolKVBucket = "STEWARD_TOOL_KV"

// ToolLimitsBucket keeps tools' calls in flight and rate schedules
// (services/execution/limit): the execution plane's alone.
const ToolLimitsBucket = "STEWARD_TOOL_LIMITS"

// Planes returns the planes that have a NATS user, in a fixed order.
func Planes() []string {
	return []string{event.PlaneControl, event.PlaneGovernance, event.PlaneExecution, event.PlaneState}
}

// Inbox returns the prefix of plane's reply subjects
// (nats.CustomInboxPrefix): each plane may subscribe to its own inbox
// only, so no plane reads the answers another's requests get — a
// JetStream publish acknowledgement, a pulled event.
func Inbox(plane string) string { return "_INBOX_" + plane }

// Grant is one line of the table: subjects a plane may publish to, may
// subscribe to, or is refused even where an allow would match.
type Grant struct {
	// Subscribe says the subjects are subscriptions, not publications.
	Subscribe bool
	// Deny says the subjects are refused: the server checks a deny
	// before any allow.
	Deny     bool
	Subjects []string
	// Why says what the plane needs it for, for the docs.
	Why string
}

// The JetStream API calls no plane may make: they would erase history or
// unhook another plane's reading of it. Stream update is refused too:
// planes create a stream only where it is missing and never reshape one;
// adding subjects to an older stream is an operator's (or steward dev's
// own setup connection's) job.
var refusedAPI = []string{
	"$JS.API.STREAM.PURGE.>",
	"$JS.API.STREAM.DELETE.>",
	"$JS.API.STREAM.MSG.DELETE.>",
	"$JS.API.STREAM.UPDATE.>",
	"$JS.API.CONSUMER.DELETE.>",
}

// RefusedAPI returns the JetStream API subjects every plane is refused.
func RefusedAPI() []string { return slices.Clone(refusedAPI) }

// ReactingPlanes returns the planes that run durable reaction consumers
// (eventlog.React), each with a consumer of its replay requests on the
// dead-letter stream.
func ReactingPlanes() []string {
	return []string{event.PlaneControl, event.PlaneGovernance, event.PlaneExecution}
}

// TimerOwners returns the planes that set timers, each in its own stream
// (timer.Stream).
func TimerOwners() []string {
	return []string{event.PlaneControl, event.PlaneGovernance, event.PlaneExecution}
}

// TimerStreams returns the streams of the planes' timers.
func TimerStreams() []string {
	var s []string
	for _, owner := range TimerOwners() {
		s = append(s, timerStream(owner))
	}
	return s
}

func timerStream(owner string) string { return timer.Stream(timer.DefaultStream, owner) }

// Streams returns every stream the planes create, the buckets' included:
// what `steward nats-streams` raises to more replicas. The shared timer
// stream of earlier versions, which planes only read, is not among them.
func Streams() []string {
	s := []string{eventlog.DefaultStream, eventlog.DefaultDeadLetterStream,
		kvStream(action.RequestBucket), kvStream(action.ResultBucket), kvStream(eventlog.DefaultFirstUseBucket),
		kvStream(ToolKVBucket), kvStream(ToolLimitsBucket), kvStream(policystore.Bucket), kvStream(StateViewsBucket)}
	return append(s, TimerStreams()...)
}

// StateViewsBucket is the bucket the state plane keeps snapshots of its
// task views in (docs/snapshots.md).
const StateViewsBucket = "STEWARD_STATE_VIEWS"

// kvStream is the stream behind a KV bucket.
func kvStream(bucket string) string { return "KV_" + bucket }

// kvKeys is the subject a put or delete of any key in bucket goes to.
func kvKeys(bucket string) string { return "$KV." + bucket + ".>" }

// Grants returns plane's lines of the table (or the Archiver's), or nil
// for an unknown plane.
func Grants(plane string) []Grant {
	if plane == Archiver {
		return archiverGrants()
	}
	if !slices.Contains(Planes(), plane) {
		return nil
	}
	ownTimers := slices.Contains(TimerOwners(), plane)
	var g grants
	g.writes(plane, ownTimers)
	g = append(g, deadLetterGrants(plane)...)
	g.jetStreamAPI(plane, ownTimers)
	g = append(g, lagGrant(plane))

	g = append(g, Grant{Deny: true, Subjects: RefusedAPI(),
		Why: "never purge or delete a stream, a message or a consumer, nor reshape a stream"})
	g = append(g, Grant{Subscribe: true, Subjects: []string{Inbox(plane) + ".>"},
		Why: "its own replies: publish acknowledgements, pulled messages, API answers"})
	return g
}

// grants is a plane's grants as they are built.
type grants []Grant

// pub grants publishing to subjects, if there are any, for why.
func (g *grants) pub(why string, subjects ...string) {
	if len(subjects) > 0 {
		*g = append(*g, Grant{Subjects: subjects, Why: why})
	}
}

// writes grants what plane writes: its own events, its bucket keys and
// its timers.
func (g *grants) writes(plane string, ownTimers bool) {
	var owned []string
	for _, typ := range sortedTypes() {
		if event.Owner(typ) == plane {
			owned = append(owned, eventlog.AppendSubjects(typ)...)
		}
	}
	g.pub("append the events of the types it owns (event.Owner), and no other", owned...)

	// Buckets: which plane puts what.
	switch plane {
	case event.PlaneControl:
		g.pub("store canonical requests (proposals) and submitted artifacts", kvKeys(action.RequestBucket), kvKeys(action.ResultBucket))
	case event.PlaneGovernance:
		g.pub("keep each policy input and bundle revision's sources for auditors (policystore)", kvKeys(policystore.Bucket))
	case event.PlaneState:
		g.pub("write snapshots of its task views, in chunks", kvKeys(StateViewsBucket))
	case event.PlaneExecution:
		g.pub("store tool results; the kv.append built-in tool's records; tools' calls in flight and rates (limits)", kvKeys(action.ResultBucket), kvKeys(ToolKVBucket), kvKeys(ToolLimitsBucket))
	}
	switch plane {
	case event.PlaneControl, event.PlaneGovernance, event.PlaneState:
		g.pub("record the first use of a request id (requestid), shared by the planes whose RPCs take one", kvKeys(eventlog.DefaultFirstUseBucket))
	}
	// Timers: a plane sets only timers whose kind starts with its name,
	// in a stream of its own; the server itself publishes them when due
	// (message schedules).
	if ownTimers {
		g.pub("set its own durable timers (kinds "+plane+".…)", timer.DefaultPrefix+"."+plane+".at.>")
	}
}

// jetStreamAPI grants the JetStream API calls plane makes to open, read
// and consume Steward's streams.
func (g *grants) jetStreamAPI(plane string, ownTimers bool) {
	// JetStream API: open (create where missing), read, consume.
	streams := []string{eventlog.DefaultStream, eventlog.DefaultDeadLetterStream,
		kvStream(action.RequestBucket), kvStream(action.ResultBucket), kvStream(eventlog.DefaultFirstUseBucket)}
	if ownTimers {
		streams = append(streams, timerStream(plane))
	}
	if plane == event.PlaneExecution {
		streams = append(streams, kvStream(ToolKVBucket), kvStream(ToolLimitsBucket))
	}
	if plane == event.PlaneGovernance || plane == event.PlaneState {
		// Governance keeps policy inputs and sources; state serves them.
		streams = append(streams, kvStream(policystore.Bucket))
	}
	if plane == event.PlaneState {
		streams = append(streams, kvStream(StateViewsBucket))
	}
	// Account info: creating a bucket asks what the server supports.
	open := []string{"$JS.API.INFO"}
	var get []string
	for _, s := range streams {
		open = append(open, "$JS.API.STREAM.INFO."+s, "$JS.API.STREAM.CREATE."+s)
		get = append(get, "$JS.API.DIRECT.GET."+s, "$JS.API.DIRECT.GET."+s+".>", "$JS.API.STREAM.MSG.GET."+s)
	}
	g.pub("open Steward's streams and buckets, creating one that is missing (never updating one)", open...)
	g.pub("read events, keys and dead letters by sequence or subject", get...)
	if ownTimers {
		// The stream every plane's timers were in before each had its
		// own: read once, to move the plane's timers out (timer.migrate).
		g.pub("move its timers out of the shared timer stream of earlier versions (read only)",
			"$JS.API.STREAM.INFO."+timer.DefaultStream, "$JS.API.STREAM.MSG.GET."+timer.DefaultStream,
			"$JS.API.CONSUMER.LIST."+timer.DefaultStream)
	}
	consumed := []string{eventlog.DefaultStream}
	if slices.Contains(ReactingPlanes(), plane) {
		consumed = append(consumed, eventlog.DefaultDeadLetterStream) // its replay consumer
	}
	if ownTimers {
		consumed = append(consumed, timerStream(plane))
	}
	var consume []string
	for _, s := range consumed {
		consume = append(consume,
			"$JS.API.CONSUMER.CREATE."+s+".>",
			"$JS.API.CONSUMER.INFO."+s+".*",
			"$JS.API.CONSUMER.MSG.NEXT."+s+".*",
			"$JS.ACK."+s+".>")
	}
	g.pub("run its durable consumers and its followers', pull and acknowledge", consume...)
	if plane == event.PlaneExecution {
		// steward restore writes it, as an operator; the plane only reads.
		cut := kvStream(backup.CutBucket)
		g.pub("read the cut of the last restore, to tell an action the old Steward may have sent after it (docs/backup.md)",
			"$JS.API.STREAM.INFO."+cut, "$JS.API.DIRECT.GET."+cut, "$JS.API.DIRECT.GET."+cut+".>", "$JS.API.STREAM.MSG.GET."+cut)
	}
}

// deadLetterGrants are what plane may write on the dead-letter stream:
// every plane's readers set aside; the planes that react say how a replay
// went; the state plane, which serves DeadLetterService, asks for one.
func deadLetterGrants(plane string) []Grant {
	// A plane's consumer is named for the plane: it writes its own
	// records and outcomes, never another consumer's, since the first
	// record on a subject is the one kept.
	dl := eventlog.DefaultDeadLetterPrefix
	g := []Grant{{Subjects: []string{dl + ".*." + eventlog.ReaderConsumer},
		Why: "set aside an event its readers cannot decode (every reader of the log may meet one)"}}
	if slices.Contains(ReactingPlanes(), plane) {
		g = append(g, Grant{Subjects: []string{dl + ".*." + plane},
			Why: "set aside an event its consumer cannot decode or process, under the consumer's name"})
		g = append(g, Grant{Subjects: []string{dl + ".replayed.*." + plane, dl + ".failed.*." + plane + ".*"},
			Why: "say how a replay of what its consumer set aside went (replayed, or failed again)"})
	}
	if plane == event.PlaneState {
		g = append(g, Grant{Subjects: []string{dl + ".replay.*.*.*"},
			Why: "ask a consumer to replay what it set aside (DeadLetterService, for operators)"})
	}
	return g
}

// lagGrant lets every process report the lag of the durable consumers on
// the log and the timer streams (eventlog.NewLagCollector), whichever
// plane it runs.
func lagGrant(plane string) Grant {
	lag := []string{"$JS.API.CONSUMER.LIST." + eventlog.DefaultStream}
	for _, s := range TimerStreams() {
		if s != timerStream(plane) { // its own is opened with its streams
			lag = append(lag, "$JS.API.STREAM.INFO."+s)
		}
		lag = append(lag, "$JS.API.CONSUMER.LIST."+s)
	}
	return Grant{Subjects: lag, Why: "list the consumers of the event and timer streams, for the lag metrics"}
}

// For returns the NATS permissions of plane's user, or nil for an unknown
// plane. Each call returns a new value the caller may keep.
func For(plane string) *server.Permissions {
	grants := Grants(plane)
	if grants == nil {
		return nil
	}
	p := &server.Permissions{Publish: &server.SubjectPermission{}, Subscribe: &server.SubjectPermission{}}
	for _, g := range grants {
		side := p.Publish
		if g.Subscribe {
			side = p.Subscribe
		}
		if g.Deny {
			side.Deny = append(side.Deny, g.Subjects...)
		} else {
			side.Allow = append(side.Allow, g.Subjects...)
		}
	}
	return p
}

func sortedTypes() []string {
	t := event.Types()
	slices.Sort(t)
	return t
}
