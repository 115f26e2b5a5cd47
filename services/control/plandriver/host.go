// Package plandriver runs a task's plan (docs/plans.md, "Running a
// plan"): a durable reaction to every event that can move a plan, which
// reads the task and does what the plan asks next. It is the control
// plane's, and reaches it only through Host: the commands a step takes go
// through the same paths a client's take (a proposal is governed as
// ProposeAction's is, a sub-task delegated as DelegateTask's), so that a
// plan can do nothing its agent could not. What a step of each kind does
// is in one table (kindOf); the pass that walks the steps is in driver.go.
package plandriver

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/timer"
	"google.golang.org/protobuf/types/known/structpb"
)

// Host is what the driver asks of the control plane.
type Host interface {
	// Write appends the event build returns for taskID's task as it
	// stands, if any, conditional on the task not having changed since.
	Write(ctx context.Context, taskID string, build taskstore.Build) error
	// Event seals payload under meta as an event of the control plane.
	Event(meta event.Meta, payload event.Payload) (*stewardv1.Event, error)
	// Steward is the actor of what Steward does of its own accord.
	Steward() *stewardv1.Actor
	// Propose proposes c on t through the path ProposeAction takes,
	// recording it only while still holds of the task as it stands; it
	// returns the action's id, or "" when it was not recorded.
	Propose(ctx context.Context, t *stewardv1.Task, c Call, still func(*stewardv1.Task) bool) (string, error)
	// Delegate makes sub-task s of parent in principal's name, as
	// DelegateTask does, checking its contract as of now.
	Delegate(ctx context.Context, principal string, parent *stewardv1.Task, s SubTask, now time.Time) error
	// GivenBack reports whether sub-task childID has given its parent,
	// whose history is history, what it reserved and did not spend, or
	// has nothing to give.
	GivenBack(ctx context.Context, parentID, childID string, history taskstore.History) (bool, error)
	// Produce marks taskID produced under event id, as MarkProduced does.
	Produce(ctx context.Context, taskID, id string) error
	// Fail fails taskID under event id for reason, undoing what it did.
	Fail(ctx context.Context, taskID, id, reason string) error
	// ResultJSON is a's result as JSON (a string for one that is not).
	ResultJSON(ctx context.Context, a *stewardv1.Action) (json.RawMessage, error)
	// RetryDue reports whether failed action a of t is to be retried by
	// the recovery policy; RetryID is the id its retry has.
	RetryDue(t *stewardv1.Task, a *stewardv1.Action) bool
	RetryID(t *stewardv1.Task, a *stewardv1.Action) string
	// OpenParams returns literal params with the values sealed among
	// sealed opened again.
	OpenParams(taskID string, params *structpb.Struct, sealed []*stewardv1.SealedSecret) (map[string]any, error)
	// Digest keys a request hash for taskID, so that an id derived from
	// it tells nothing of the request ("" with no key: the hash stands).
	Digest(taskID, hash string) string
}

// Call is an action a step proposes.
type Call struct {
	// TaskID is the task's; CauseID the event that moved the driver.
	TaskID, CauseID string
	// ProposalIDOf gives the proposal id from the request's hash.
	ProposalIDOf      func(requestHash string) string
	PlanStep          string
	Milestone         string
	Decision          string // the plan version's decision_id
	Tool, ToolVersion string
	Target            string
	Params            []byte // a JSON object
	Retry             *stewardv1.RetryPolicy
	Rationale         *stewardv1.ActionRationale
	Principal         string
}

// SubTask is a sub-task a step delegates.
type SubTask struct {
	ChildID, RequestID, DelegateRef string
	// Contract is the step's, as the plan has it: Delegate checks it.
	Contract *stewardv1.TaskContract
	// Still refuses the delegation once the step has moved on.
	Still func(parent *stewardv1.Task) error
}

// Config is what a Driver runs on besides its host.
type Config struct {
	Log    *eventlog.Log
	Tasks  *taskstore.Store // the tasks of Log, folded
	Timers *timer.Timers    // nil: a wait step waits for a plane that has them
	Logger *slog.Logger
	Now    func() time.Time
	// StepProposed, if set, runs before a step proposes or delegates:
	// the crash matrix's hook.
	StepProposed func(step string) error
}

// Driver runs the plans of the tasks on one log.
type Driver struct {
	host Host
	cfg  Config
}

// New returns a driver over host.
func New(host Host, cfg Config) *Driver {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Driver{host: host, cfg: cfg}
}
