package task_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// TestShallowActionCopiesEveryField: a shallow copy holds every field of
// the action, a field added later included, and shares its sub-messages.
func TestShallowActionCopiesEveryField(t *testing.T) {
	a := &stewardv1.Action{}
	stewardtest.Filled(a)
	c := task.ShallowAction(a)
	if c == a {
		t.Fatal("the copy is the action itself")
	}
	if !proto.Equal(c, a) {
		t.Fatalf("the shallow copy lost a field (list it in shallowAction):\n got %v\nwant %v", c, a)
	}
	fields := a.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); fd.Message() != nil && !fd.IsList() && !fd.IsMap() &&
			c.ProtoReflect().Get(fd).Message().Interface() != a.ProtoReflect().Get(fd).Message().Interface() {
			t.Errorf("%s is copied; want it shared", fd.Name())
		}
	}
}
