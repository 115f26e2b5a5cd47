package toolreg_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolreg"
)

// TestIdempotencyFieldsHaveOneMeaning checks contract.idempotency: the
// key scope Steward gives ("action") and the behaviour on a repeated key
// it relies on ("return_first") are accepted, empty or set, on a tool that
// honours its key; any other value, and any of them on a tool that does
// not honour its key, is refused naming the field.
func TestIdempotencyFieldsHaveOneMeaning(t *testing.T) {
	day := durationpb.New(24 * time.Hour)
	for _, ok := range []*stewardv1.IdempotencySupport{
		nil,
		{},
		{HonoursKey: true},
		{HonoursKey: true, KeyScope: toolreg.KeyScopeAction, OnRepeat: toolreg.OnRepeatReturnFirst, Retention: day},
		{HonoursKey: true, KeyScope: "action"},
		{HonoursKey: true, OnRepeat: "return_first"},
	} {
		c := valid()
		c.Idempotency = ok
		if err := toolreg.New(nil).Validate(c); err != nil {
			t.Errorf("idempotency %v refused: %v", ok, err)
		}
	}
	for _, tt := range []struct {
		name  string
		idem  *stewardv1.IdempotencySupport
		field string
	}{
		{"a scope Steward does not give", &stewardv1.IdempotencySupport{HonoursKey: true, KeyScope: "per-tool"}, "contract.idempotency.key_scope"},
		{"a scope in another case", &stewardv1.IdempotencySupport{HonoursKey: true, KeyScope: "Action"}, "contract.idempotency.key_scope"},
		{"a behaviour in words", &stewardv1.IdempotencySupport{HonoursKey: true, OnRepeat: "the first result"}, "contract.idempotency.on_repeat"},
		{"a repeat that does the work again", &stewardv1.IdempotencySupport{HonoursKey: true, OnRepeat: "execute_again"}, "contract.idempotency.on_repeat"},
		{"a scope without an honoured key", &stewardv1.IdempotencySupport{KeyScope: "action"}, "contract.idempotency.key_scope"},
		{"a behaviour without an honoured key", &stewardv1.IdempotencySupport{OnRepeat: "return_first"}, "contract.idempotency.on_repeat"},
		{"a retention without an honoured key", &stewardv1.IdempotencySupport{Retention: day}, "contract.idempotency.retention"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			c.Idempotency = tt.idem
			err := toolreg.New(nil).Validate(c)
			var e *errs.Error
			if !errors.As(err, &e) || e.Field != tt.field || e.Code != errs.Invalid {
				t.Fatalf("err = %v, want invalid naming %s", err, tt.field)
			}
		})
	}
}
