// Package adapter is how the execution plane calls tools: one Adapter per
// kind of endpoint (the HTTP tool protocol of DESIGN.md, or a builtin that
// runs in the process), each handing the tool the action's op_key so that a
// repeated dispatch does the work at most once.
//
// An adapter never retries and never decides what happens next: it turns one
// call into a Result — succeeded, failed with a class, or unknown — and, for
// an unknown outcome, answers a status query when the tool offers one. The
// caller owns retries, circuit breakers and reconciliation.
package adapter

import (
	"context"
	"errors"
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Request is one dispatch of an action.
type Request struct {
	TaskID   string
	ActionID string
	// OpKey is the idempotency key the tool sees; the same key on a repeat
	// is what lets a tool do the work once.
	OpKey string
	// Tool says where the tool is and how long a call may take.
	Tool *stewardv1.ToolContract
	// Body is the canonical request as JSON:
	// {"params":{...},"target":"...","task_id":"...","tool":"...","tool_version":"..."}.
	Body []byte
	// RequestHash is the action's request_hash, and Attempt the dispatch
	// this call makes: what a call's signed token says besides the above.
	RequestHash string
	Attempt     uint32
}

// Result is what a call came to.
type Result struct {
	// Status is ACTION_STATUS_SUCCEEDED, ACTION_STATUS_FAILED or
	// ACTION_STATUS_UNKNOWN.
	Status stewardv1.ActionStatus
	// Body is the tool's JSON result when Status is SUCCEEDED.
	Body []byte
	// FailureClass is TRANSIENT or DETERMINISTIC when Status is FAILED.
	FailureClass stewardv1.FailureClass
	// Reason says why, for people, when Status is FAILED or UNKNOWN.
	Reason string
	// InFlight is set when the tool says the key is still being worked on
	// (HTTP 409 in flight); Status is then UNKNOWN.
	InFlight bool
	// Arrived is set when the request may have reached the tool: it
	// answered (even 5xx), or the request was sent and no answer came.
	// Only a request that surely never arrived may be sent again to a tool
	// that could act twice (see the execution plane's retry rule).
	Arrived bool
	// CostMicros is what the tool says the call cost (HTTP header
	// Steward-Cost-Micros); 0 when it does not say.
	CostMicros int64
	// Tokens is what a model call spent, in and out, as the model said.
	Tokens int64
	// ModelFailure says how a model call failed (ModelRateLimited, …),
	// counted apart from tools' failures; "" for any other call.
	ModelFailure string
}

// StatusAnswer is a tool's authoritative answer about an op_key.
type StatusAnswer struct {
	// State is one of the State* constants.
	State  string
	Result []byte
	Reason string
}

// The states a status query may answer. StateNotAccepted alone allows the
// same request to be dispatched again, with the same key.
const (
	StateSucceeded   = "succeeded"
	StateFailed      = "failed"
	StateInProgress  = "in_progress"
	StateNotAccepted = "not_accepted"
)

// validState reports whether s is one of the four states of the protocol.
func validState(s string) bool {
	switch s {
	case StateSucceeded, StateFailed, StateInProgress, StateNotAccepted:
		return true
	}
	return false
}

// Adapter calls one kind of tool endpoint. Implementations are safe for
// concurrent use.
type Adapter interface {
	// Call dispatches req once. It never returns an error: every way a call
	// can end is a Result.
	Call(ctx context.Context, req Request) Result
	// Status asks the tool what happened to req.OpKey; ErrNoStatusQuery if
	// the tool offers none. An error is not an answer: the outcome stays
	// unknown.
	Status(ctx context.Context, req Request) (StatusAnswer, error)
}

// ErrNoStatusQuery is returned by Status when the tool offers no status
// query, so an unknown outcome cannot be settled by asking it.
var ErrNoStatusQuery = errors.New("adapter: tool offers no status query")

// Set holds one adapter per kind of endpoint. It is a value with no state of
// its own, safe for concurrent use when its adapters are.
type Set struct {
	HTTP    Adapter
	Builtin Adapter
	Model   Adapter
	MCP     Adapter
}

// For picks the adapter for a tool's endpoint (http, builtin, model or mcp); an error
// names the problem.
func (s Set) For(tool *stewardv1.ToolContract) (Adapter, error) {
	if tool == nil {
		return nil, errors.New("adapter: no tool contract")
	}
	name := tool.GetName() + "@" + tool.GetVersion()
	switch ep := tool.GetEndpoint().(type) {
	case *stewardv1.ToolContract_Http:
		if ep.Http.GetUrl() == "" {
			return nil, fmt.Errorf("adapter: tool %s: http endpoint has no url", name)
		}
		if s.HTTP == nil {
			return nil, fmt.Errorf("adapter: tool %s: no http adapter configured", name)
		}
		return s.HTTP, nil
	case *stewardv1.ToolContract_Builtin:
		if ep.Builtin.GetKind() == "" {
			return nil, fmt.Errorf("adapter: tool %s: builtin endpoint has no kind", name)
		}
		if s.Builtin == nil {
			return nil, fmt.Errorf("adapter: tool %s: no builtin adapter configured", name)
		}
		return s.Builtin, nil
	case *stewardv1.ToolContract_Model:
		if s.Model == nil {
			return nil, fmt.Errorf("adapter: tool %s: no model adapter configured", name)
		}
		return s.Model, nil
	case *stewardv1.ToolContract_Mcp:
		if s.MCP == nil {
			return nil, fmt.Errorf("adapter: tool %s: no mcp adapter configured", name)
		}
		return s.MCP, nil
	case nil:
		return nil, fmt.Errorf("adapter: tool %s has no endpoint", name)
	default:
		return nil, fmt.Errorf("adapter: tool %s: unsupported endpoint %T", name, ep)
	}
}

func succeeded(body []byte) Result {
	return Result{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Body: body}
}

func transient(format string, args ...any) Result {
	return Result{
		Status:       stewardv1.ActionStatus_ACTION_STATUS_FAILED,
		FailureClass: stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT,
		Reason:       fmt.Sprintf(format, args...),
	}
}

func deterministic(format string, args ...any) Result {
	return Result{
		Status:       stewardv1.ActionStatus_ACTION_STATUS_FAILED,
		FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC,
		Reason:       fmt.Sprintf(format, args...),
	}
}

func unknown(format string, args ...any) Result {
	return Result{
		Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN,
		Reason: fmt.Sprintf(format, args...),
	}
}
