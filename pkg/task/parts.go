package task

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Parts calls fn with each message t holds directly, with its name in t
// ("contract", "action a1", "milestones[0]"): its message fields and the
// elements of its lists of messages. The fold never changes a part in
// place, it replaces it (checked in race-detector builds), so a copy of t
// that shares t's parts, as taskstore's Load hands out, stays as it was
// while the fold moves on. Every field is read by reflection: a field
// added later is a part too.
func Parts(t *stewardv1.Task, fn func(part proto.Message, name func() string)) {
	t.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			m := v.Map()
			if fd.MapValue().Message() == nil {
				return true
			}
			m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				fn(v.Message().Interface(), func() string { return fmt.Sprintf("%s[%v]", fd.Name(), k) })
				return true
			})
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				part := l.Get(i).Message().Interface()
				fn(part, func() string { return partName(fd, i, part) })
			}
		case fd.Message() != nil:
			fn(v.Message().Interface(), func() string { return string(fd.Name()) })
		}
		return true
	})
}

// partName names element i of list fd, an action by its id.
func partName(fd protoreflect.FieldDescriptor, i int, part proto.Message) string {
	if a, ok := part.(*stewardv1.Action); ok {
		return "action " + a.ActionId
	}
	return fmt.Sprintf("%s[%d]", fd.Name(), i)
}
