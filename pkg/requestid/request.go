package requestid

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/taskstore"
)

// Request is a request id claimed for one command, from Begin to Settle:
// the one way every plane makes a command idempotent on its request id.
// A Request with no request id claims nothing, and its Settle does
// nothing. Settle once, from the command's goroutine.
type Request struct {
	eventID  string
	hold     *Hold
	log      *eventlog.Log
	recorded func(context.Context) bool
	logger   *slog.Logger
}

// Option changes how Begin claims a request id.
type Option func(*Request)

// RecordedBy says what shows the command recorded something, for a
// command whose record is not an event under EventID on its task (the
// task a CreateTask opens, say). It reports true when unsure: a request
// id is only freed when nothing was recorded.
func RecordedBy(recorded func(context.Context) bool) Option {
	return func(r *Request) { r.recorded = recorded }
}

// Logger is where Settle warns of a request id it could not keep or free.
func Logger(l *slog.Logger) Option {
	return func(r *Request) { r.logger = l }
}

// Begin claims requestID in s for command (one of Commands) on taskID,
// with req as sent (see Claim and UseOf). A request id first used
// otherwise is AlreadyExists, and the command must record nothing. The
// command records under EventID, so that a retry finds what its first
// try recorded and answers from it; it ends with Settle.
func Begin(ctx context.Context, tasks *taskstore.Store, s Scope, command, taskID, requestID string, req proto.Message, opts ...Option) (*Request, error) {
	if requestID == "" {
		return &Request{}, nil
	}
	log := tasks.Log()
	h, err := Claim(ctx, log, s, requestID, UseOf(command, taskID, req))
	if err != nil {
		return nil, err
	}
	r := &Request{eventID: s.EventID(taskID, command, requestID), hold: h, log: log, logger: slog.New(slog.DiscardHandler)}
	r.recorded = func(ctx context.Context) bool { return HistoryHas(ctx, tasks, taskID, r.eventID) }
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// EventID is the id of the event the command records under, derived from
// the caller, the command, its task and the request id; empty without a
// request id.
func (r *Request) EventID() string { return r.eventID }

// Settle ends the command with its error, called deferred with the named
// error result. A command that succeeded keeps the id (Hold.Keep); one
// refused before it recorded anything (Refused: bad input, a state that
// forbids it) frees it, so that the request, fixed, may use it; any other
// failure may have recorded the command, and keeps it.
func (r *Request) Settle(ctx context.Context, err *error) {
	if r == nil || r.hold == nil {
		return
	}
	// Whatever the caller's context says now, the id must not stay spent
	// by a command that did nothing, nor be lost by one that did.
	ctx = context.WithoutCancel(ctx)
	if *err == nil {
		if kerr := r.hold.Keep(ctx, r.log); kerr != nil {
			r.logger.WarnContext(ctx, "a retried command's request id may not be recorded", "event_id", r.eventID, "err", kerr)
		}
		return
	}
	if !Refused(*err) || r.recorded(ctx) {
		return
	}
	if rerr := r.hold.Release(ctx, r.log); rerr != nil && !errors.Is(rerr, context.Canceled) {
		r.logger.WarnContext(ctx, "a refused command's request id stays spent", "event_id", r.eventID, "err", rerr)
	}
}

// HistoryHas reports whether taskID's history has event id, or whether it
// is unsure: any failure to read but "no such task" counts as recorded.
func HistoryHas(ctx context.Context, tasks *taskstore.Store, taskID, id string) bool {
	_, h, err := tasks.Load(ctx, taskID)
	if err != nil {
		return !errs.Is(err, errs.NotFound)
	}
	return h.Has(id)
}
