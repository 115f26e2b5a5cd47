package steward

import (
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// Error is Steward's refusal of a call: its Connect code, its message and,
// for bad input, the field it names (as the request spells it, e.g.
// "contract.budget.max_tokens").
type Error struct {
	Code    connect.Code
	Message string
	Field   string
	err     error
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("steward: %s: %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("steward: %s: %s", e.Code, e.Message)
}

// Unwrap is the *connect.Error it came as.
func (e *Error) Unwrap() error { return e.err }

// CodeOf returns err's code: connect.CodeUnknown for an error that is not
// Steward's.
func CodeOf(err error) connect.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return connect.CodeOf(err)
}

func asError(err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err
	}
	e := &Error{Code: ce.Code(), Message: ce.Message(), err: err}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if br, ok := v.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 {
				e.Field = br.FieldViolations[0].Field
			}
		}
	}
	return e
}
