package taskstore_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

// TestShallowTaskCopiesEveryField: the copy Load hands out holds every
// field of the task, a field added later included; it shares the task's
// parts, and its lists (and maps) are its own.
func TestShallowTaskCopiesEveryField(t *testing.T) {
	tk := &stewardv1.Task{}
	stewardtest.Filled(tk)
	before := proto.CloneOf(tk)
	c := taskstore.ShallowTask(tk)
	if !proto.Equal(c, tk) {
		t.Fatalf("the shallow copy lost a field (list it in shallowTask):\n got %v\nwant %v", c, tk)
	}
	shared := map[proto.Message]bool{}
	task.Parts(tk, func(part proto.Message, _ func() string) { shared[part] = true })
	task.Parts(c, func(part proto.Message, name func() string) {
		if !shared[part] {
			t.Errorf("%s is copied; want it shared", name())
		}
	})

	// A caller changes its copy's lists: the task's stay as they were.
	r := c.ProtoReflect()
	fields := r.Descriptor().Fields()
	for i := range fields.Len() {
		switch fd := fields.Get(i); {
		case fd.IsList():
			l := r.Mutable(fd).List()
			e := l.NewElement() // a scalar's zero, unlike the one Filled set
			if fd.Message() != nil {
				stewardtest.Filled(e.Message().Interface()) // unlike the empty one Filled set
			}
			l.Set(0, e)
			l.Append(l.NewElement())
		case fd.IsMap():
			m := r.Mutable(fd).Map()
			m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool { m.Clear(k); return true })
		}
	}
	if !proto.Equal(tk, before) {
		t.Fatal("changing the copy's lists changed the task's: copy each list in shallowTask")
	}
}
