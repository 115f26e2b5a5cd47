// Package requestid gives a client's request id its one meaning: it names
// exactly one command, with one body, on one task, for one caller. A
// repeat of that command is a retry and gets the first answer; anything
// else under the same id is AlreadyExists, naming what the id was first
// used for — never a silent success that did nothing.
//
// Ids are scoped: a Scope (tenant, principal) is part of every id derived
// from a request id, so two callers who both pick "demo-1" make two tasks
// and neither learns of the other's.
//
// The first use of each id is recorded create-only (Log.FirstUse) before
// the command's own conditional append, never inside it. The derived event
// ids cannot do this alone: a command's event lives on its task's log, so
// the same id reused on another task, or for another command whose event
// is built differently, would find nothing there. One key per (scope,
// request id) sees every reuse. A use whose command is then refused (an
// illegal transition) keeps the id: the same command may be retried, a
// different one needs a new id.
//
// Every plane uses a request id the same way, through Begin and Settle
// (Request), for one of the commands declared in command.go: each
// command's name is in the ids derived for it, and never changes.
//
// Everything here is safe for concurrent use.
package requestid

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/limits"
)

// Scope is whose request ids these are. Tenant is the caller's tenant,
// empty for the default tenant: ids derived in the default tenant are
// those derived before Steward had tenants.
type Scope struct {
	Tenant    string
	Principal string
	// Task narrows the scope to one task: set for an agent's proposal
	// ids, which name steps of one task (see ForProposal).
	Task string
}

// ForPrincipal is the scope of a caller known by its principal alone, in
// the default tenant.
func ForPrincipal(principal string) Scope { return Scope{Principal: principal} }

// For is the scope of the caller principal of tenant: two tenants' callers
// of the same name who pick the same request id make two tasks.
func For(tenant, principal string) Scope { return Scope{Tenant: tenant, Principal: principal} }

// ForProposal is the scope of a caller's proposal ids on one task. An
// action's id derives from its task and proposal id, and an agent that
// names its steps "step-1" on every task means another step each time; on
// one task, the proposal id still names one proposal with one body.
func ForProposal(principal, taskID string) Scope {
	return Scope{Principal: principal, Task: taskID}
}

func (s Scope) parts(requestID string) []string {
	parts := []string{"tenant", s.Tenant, "principal", s.Principal}
	if s.Task != "" {
		parts = append(parts, "task", s.Task)
	}
	return append(parts, "request", requestID)
}

// TaskID is the id of the task requestID creates in s: deriving it is
// what makes creating a task idempotent without a second store.
func (s Scope) TaskID(requestID string) string {
	return event.ID(append([]string{"task"}, s.parts(requestID)...)...)
}

// ObjectiveID is the id of the objective requestID creates in s
// (TaskService.CreateObjective), derived as a task's is.
func (s Scope) ObjectiveID(requestID string) string {
	return event.ID(append([]string{"objective"}, s.parts(requestID)...)...)
}

// EventID is the id of the event command (its RPC's name) with requestID
// records on taskID: a retry finds it in the task's history. The command
// is part of it, so that no other command's event is ever taken for it,
// even after the first use is forgotten (FirstUseTTL).
func (s Scope) EventID(taskID, command, requestID string) string {
	return event.ID(append([]string{taskID, "command", command}, s.parts(requestID)...)...)
}

// key is where the first use of requestID in s is recorded.
func (s Scope) key(requestID string) string {
	return "r." + event.ID(s.parts(requestID)...)
}

// Use is what a request id is used for: one command (its RPC's name, such
// as "PauseTask"), on one task, with one body.
type Use struct {
	Command string `json:"command"`
	TaskID  string `json:"task_id"`
	// Body is the SHA-256 of the request without its request id, in
	// deterministic protobuf encoding: the same message from the same
	// build always encodes the same (see UseOf).
	Body string `json:"body"`
}

// idFields are the fields that carry a request's id, left out of its body.
var idFields = []protoreflect.Name{"request_id", "proposal_id"}

// UseOf is the use of a request id by command on taskID with req. The
// body is all of req but its request id (request_id, or ProposeAction's
// proposal_id), so the task id is in it too. Deterministic encoding is
// stable for one build; were a new protobuf library to encode a map
// differently, a retry across the upgrade would be refused, never
// mistaken for a match.
func UseOf(command, taskID string, req proto.Message) Use {
	m := proto.Clone(req).ProtoReflect()
	for _, name := range idFields {
		if fd := m.Descriptor().Fields().ByName(name); fd != nil {
			m.Clear(fd)
		}
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m.Interface())
	if err != nil {
		// Only an invalid message fails to encode; it cannot match another.
		data = []byte(err.Error())
	}
	sum := sha256.Sum256(data)
	return Use{Command: command, TaskID: taskID, Body: hex.EncodeToString(sum[:])}
}

// Hold is a request id claimed for one use. A refused command releases
// it (see Release), so that the request, fixed, may use the id.
type Hold struct {
	key      string
	use      []byte
	revision uint64 // of the record this claim made; 0 if it found one
}

// Claim records u as the use of requestID in s. The first use wins; the
// same use again (a retry) is held too; any other use is AlreadyExists,
// naming the first. An empty request id claims nothing (a nil Hold).
func Claim(ctx context.Context, log *eventlog.Log, s Scope, requestID string, u Use) (*Hold, error) {
	if requestID == "" {
		return nil, nil
	}
	mine, err := json.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("claim request id: %w", err)
	}
	key := s.key(requestID)
	got, rev, err := log.FirstUse(ctx, key, mine)
	if err != nil {
		return nil, err
	}
	var first Use
	if err := json.Unmarshal(got, &first); err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "the first use of request id %s", errs.Quote(requestID))
	}
	if first == u {
		return &Hold{key: key, use: mine, revision: rev}, nil
	}
	what := ""
	if first.Command == u.Command && first.TaskID == u.TaskID {
		what = " with another body"
	}
	return nil, errs.New(errs.AlreadyExists, "request id %s was first used for %s on task %s%s; a request id names one command with one body on one task: use a new one",
		errs.Quote(requestID), first.Command, first.TaskID, what)
}

// Release forgets the first use h recorded, when the command it was
// claimed for refused it and recorded nothing: nothing happened under the
// id, so it is free. A hold that found the use recorded before (a retry)
// releases nothing. nil is a no-op.
func (h *Hold) Release(ctx context.Context, log *eventlog.Log) error {
	if h == nil || h.revision == 0 {
		return nil
	}
	return log.ForgetFirstUse(ctx, h.key, h.revision)
}

// Keep makes sure the use h found is still recorded once its command has
// been: the claim that recorded it may have been refused and released
// while this one, a retry at the same moment, went through.
func (h *Hold) Keep(ctx context.Context, log *eventlog.Log) error {
	if h == nil || h.revision != 0 {
		return nil
	}
	got, _, err := log.FirstUse(ctx, h.key, h.use)
	if err == nil && !bytes.Equal(got, h.use) {
		// Another use claimed the id in the moment it was free: both
		// ran, which only a client reusing one id for two commands at
		// once can bring about.
		return fmt.Errorf("request id's first use is now %s, not this one", got)
	}
	return err
}

// Refused reports whether err refuses a command as it was asked, with
// nothing recorded: bad input, a state that does not allow it, something
// missing, no permission, a quota reached. A conflict or an unavailable log may have
// recorded it, and keeps the claim.
func Refused(err error) bool {
	switch errs.CodeOf(err) {
	case errs.Invalid, errs.TooLarge, errs.FailedPrecondition, errs.NotFound, errs.PermissionDenied, errs.QuotaExceeded:
		return err != nil
	}
	return false
}

// LegacyTaskID and LegacyEventID are the ids a request id derived before
// request ids were the caller's own (before STEWARD_REQUEST_IDS): a retry
// sent across the upgrade finds what its first try recorded under them.
func LegacyTaskID(requestID string) string { return event.ID("task", requestID) }

// LegacyEventID: see LegacyTaskID.
func LegacyEventID(taskID, requestID string) string {
	return event.ID(taskID, "command", requestID)
}

// MaxLen is the longest request id, in bytes.
const MaxLen = limits.MaxRequestID

// Check refuses a request id past MaxLen or not valid UTF-8, naming the
// field request_id.
func Check(requestID string) error {
	switch {
	case len(requestID) > MaxLen:
		return &errs.Error{Code: errs.TooLarge, Field: "request_id", Message: fmt.Sprintf("is %d bytes; the limit is %d", len(requestID), MaxLen)}
	case !utf8.ValidString(requestID):
		return errs.Field("request_id", "is not valid UTF-8")
	}
	return nil
}
