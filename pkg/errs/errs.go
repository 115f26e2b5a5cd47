// Package errs holds Steward's domain error codes. Planes and packages return
// *Error values built here; the RPC edge (pkg/rpc) translates them into
// Connect codes in one table, and the CLI prints them as they are.
package errs

import (
	"errors"
	"fmt"
)

// Code classifies a domain error. It says what the caller can do about it,
// not where it came from.
type Code int

const (
	// Internal is a bug or an unexpected failure; callers see no detail.
	Internal Code = iota
	// Invalid means the input is wrong; Field names which part.
	Invalid
	// NotFound means the named thing does not exist.
	NotFound
	// AlreadyExists means a create met an existing, different thing.
	AlreadyExists
	// FailedPrecondition means the input is fine but the state forbids it,
	// such as an illegal task transition.
	FailedPrecondition
	// Conflict means another writer got there first; re-read and retry.
	Conflict
	// TooLarge means the input exceeds a documented limit.
	TooLarge
	// Unavailable means a dependency (the log) cannot be reached right now.
	Unavailable
	// Corrupt means stored data fails its integrity check.
	Corrupt
	// PermissionDenied means the caller is known but may not do this.
	PermissionDenied
	// QuotaExceeded means the request is fine but a quota on what its
	// caller or tenant holds (running tasks, plan bytes, stored content)
	// is reached; ending or removing something frees room.
	QuotaExceeded
)

var codeNames = map[Code]string{
	Internal:           "internal",
	Invalid:            "invalid",
	NotFound:           "not found",
	AlreadyExists:      "already exists",
	FailedPrecondition: "failed precondition",
	Conflict:           "conflict",
	TooLarge:           "too large",
	Unavailable:        "unavailable",
	Corrupt:            "corrupt",
	PermissionDenied:   "permission denied",
	QuotaExceeded:      "quota exceeded",
}

func (c Code) String() string { return codeNames[c] }

// Error is a domain error with a code and, for Invalid and TooLarge, the
// name of the offending field as the client spelled it.
type Error struct {
	Code    Code
	Field   string
	Message string
	Err     error
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		if msg == "" {
			return e.Err.Error()
		}
		return msg + ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with code and message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Field returns an Invalid error that names field.
func Field(field, format string, args ...any) *Error {
	return &Error{Code: Invalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns err under code with a short context message.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// CodeOf returns the code of the first *Error in err's chain, or Internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries code.
func Is(err error, code Code) bool { return err != nil && CodeOf(err) == code }
