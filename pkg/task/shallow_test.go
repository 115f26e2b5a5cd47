package task

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// filled sets every field of m, and an unknown one, so that a copy that
// leaves one out is not equal to it.
func filled(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsMap():
			m.Mutable(fd).Map().Set(scalar(fd.MapKey()).MapKey(), elementOf(m.Mutable(fd).Map().NewValue, fd.MapValue()))
		case fd.IsList():
			l := m.Mutable(fd).List()
			l.Append(elementOf(l.NewElement, fd))
		case fd.Message() != nil:
			m.Set(fd, protoreflect.ValueOfMessage(m.NewField(fd).Message()))
		default:
			m.Set(fd, scalar(fd))
		}
	}
	m.SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 9999, protowire.VarintType), 1))
}

func elementOf(newValue func() protoreflect.Value, fd protoreflect.FieldDescriptor) protoreflect.Value {
	if fd.Message() != nil {
		return newValue()
	}
	return scalar(fd)
}

// scalar is a value of fd's kind that is not its zero value.
func scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(string(fd.Name()))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(fd.Name()))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(fd.Number()))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(fd.Number()))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(fd.Number()))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(fd.Number()))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(fd.Number()))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(fd.Number()))
	}
	panic(fmt.Sprintf("no test value for %s of kind %s", fd.FullName(), fd.Kind()))
}

// TestShallowActionCopiesEveryField: a shallow copy holds every field of
// the action, a field added later included, and shares its sub-messages.
func TestShallowActionCopiesEveryField(t *testing.T) {
	a := &stewardv1.Action{}
	filled(a.ProtoReflect())
	c := shallowAction(a)
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

// TestChangeOfASharedSubMessageIsCaught: in race-detector builds, a change
// that changes a sub-message in place rather than setting a new one
// panics, since the entry it replaces shares it.
func TestChangeOfASharedSubMessageIsCaught(t *testing.T) {
	if !guardShared {
		t.Skip("the check is built with the race detector")
	}
	tk := &stewardv1.Task{Actions: []*stewardv1.Action{{ActionId: "a1", Status: proposed, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1"}}}}
	tr := &actionChange{id: "a1", from: []stewardv1.ActionStatus{proposed},
		apply: func(a *stewardv1.Action) { a.Snapshot.SnapshotId = "s2" }} // what a change must not do
	commit, err := tr.step(tk, &stewardv1.Event{Type: "policy.evaluated"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "action a1 in place") {
			t.Fatalf("a shared sub-message changed in place went unnoticed: %v", r)
		}
	}()
	commit()
}
