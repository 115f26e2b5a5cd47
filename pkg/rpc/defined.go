package rpc

import (
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// checkDefined walks m at every depth and returns the first field that
// holds something the schema does not define: an unknown field (binary
// protobuf keeps those) or an enum number with no name. path is m's own
// path, "" at the top. Fields are named by their proto names, as every
// other Steward error names them.
func checkDefined(m protoreflect.Message, path string) *errdetails.BadRequest_FieldViolation {
	if raw := m.GetUnknown(); len(raw) > 0 {
		// An unknown field has no name, only its number, which names it
		// as protobuf's text format does.
		num, _, _ := protowire.ConsumeTag(raw)
		return &errdetails.BadRequest_FieldViolation{
			Field:       join(path, fmt.Sprint(num)),
			Description: fmt.Sprintf("is not a field of %s", m.Descriptor().FullName()),
		}
	}
	var bad *errdetails.BadRequest_FieldViolation
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := join(path, string(fd.Name()))
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && bad == nil; i++ {
				bad = checkValue(fd, l.Get(i), fmt.Sprintf("%s[%d]", name, i))
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				bad = checkValue(fd.MapValue(), mv, fmt.Sprintf("%s[%s]", name, truncate(k.String())))
				return bad == nil
			})
		default:
			bad = checkValue(fd, v, name)
		}
		return bad == nil
	})
	return bad
}

// checkValue checks one value of field fd (a list element, a map value, or
// a singular field).
func checkValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) *errdetails.BadRequest_FieldViolation {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		e := fd.Enum()
		if e.Values().ByNumber(v.Enum()) == nil {
			return &errdetails.BadRequest_FieldViolation{
				Field:       path,
				Description: fmt.Sprintf("%d is not a defined %s; use one of %s", v.Enum(), e.FullName(), enumNames(e)),
			}
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return checkDefined(v.Message(), path)
	}
	return nil
}

// enumNames lists an enum's names, leaving out the zero value, which
// means "not set".
func enumNames(e protoreflect.EnumDescriptor) string {
	var names []string
	vals := e.Values()
	for i := range vals.Len() {
		if vals.Get(i).Number() != 0 {
			names = append(names, string(vals.Get(i).Name()))
		}
	}
	return strings.Join(names, ", ")
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// maxEcho bounds a value from the request quoted back in an error: an
// answer must not grow with the input.
const maxEcho = 64

// truncate cuts s to maxEcho bytes on a rune boundary, marking the cut.
func truncate(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
