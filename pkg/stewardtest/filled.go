package stewardtest

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Filled sets every field of m, and an unknown one, to a value that is
// not its zero (a list and a map to one entry, a message to an empty
// one): a copy of m that leaves out a field, a field added later
// included, then differs from it under proto.Equal.
func Filled(m proto.Message) {
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsMap():
			mv := r.Mutable(fd).Map()
			mv.Set(nonZero(fd.MapKey()).MapKey(), valueOf(mv.NewValue, fd.MapValue()))
		case fd.IsList():
			l := r.Mutable(fd).List()
			l.Append(valueOf(l.NewElement, fd))
		case fd.Message() != nil:
			r.Set(fd, protoreflect.ValueOfMessage(r.NewField(fd).Message()))
		default:
			r.Set(fd, nonZero(fd))
		}
	}
	r.SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 9999, protowire.VarintType), 1))
}

// valueOf is a new message for a field of messages, else a scalar.
func valueOf(newMessage func() protoreflect.Value, fd protoreflect.FieldDescriptor) protoreflect.Value {
	if fd.Message() != nil {
		return newMessage()
	}
	return nonZero(fd)
}

// nonZero is a value of fd's kind that is not its zero value.
func nonZero(fd protoreflect.FieldDescriptor) protoreflect.Value {
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
	panic(fmt.Sprintf("stewardtest: no value for %s of kind %s", fd.FullName(), fd.Kind()))
}
