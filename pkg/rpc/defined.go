package rpc

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/terminal"
)

// valueName is google.protobuf.Value, whose kind is a oneof that must be set.
const valueName protoreflect.FullName = "google.protobuf.Value"

// violation is a field a request may not carry, and why.
type violation struct {
	field, description string
}

// checkDefined walks m at every depth and returns the first field that
// holds something the schema does not define: an unknown field (binary
// protobuf keeps those), an enum number with no name, or a
// google.protobuf.Value with no kind (binary protobuf takes one; JSON
// cannot say it, so nothing after the edge could write it back). Fields are named
// by their proto names, as every other Steward error names them. The walk
// keeps its path as steps and renders it only for a violation: a path
// built at every level costs the square of the depth.
func checkDefined(m protoreflect.Message) *violation {
	return walkDefined(m, make(path, 0, 16))
}

func walkDefined(m protoreflect.Message, at path) *violation {
	if raw := m.GetUnknown(); len(raw) > 0 {
		// An unknown field has no name, only its number, which names it
		// as protobuf's text format does.
		num, _, _ := protowire.ConsumeTag(raw)
		return &violation{
			field:       append(at, step{name: strconv.Itoa(int(num))}).String(),
			description: fmt.Sprintf("is not a field of %s", m.Descriptor().FullName()),
		}
	}
	if d := m.Descriptor(); d.FullName() == valueName && m.WhichOneof(d.Oneofs().ByName("kind")) == nil {
		return &violation{field: at.String(), description: "is a google.protobuf.Value with no kind set: send null_value for a null"}
	}
	var bad *violation
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		here := append(at, step{name: string(fd.Name())})
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && bad == nil; i++ {
				bad = checkValue(fd, l.Get(i), append(here, step{index: i, isIndex: true}))
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				bad = checkValue(fd.MapValue(), mv, append(here, step{name: k.String(), isKey: true}))
				return bad == nil
			})
		default:
			bad = checkValue(fd, v, here)
		}
		return bad == nil
	})
	return bad
}

// checkValue checks one value of field fd (a list element, a map value, or
// a singular field).
func checkValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, at path) *violation {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		e := fd.Enum()
		if e.Values().ByNumber(v.Enum()) == nil {
			return &violation{field: at.String(), description: fmt.Sprintf("%d is not a defined %s%s", v.Enum(), e.FullName(), useOneOf(e))}
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return walkDefined(v.Message(), at)
	}
	return nil
}

// useOneOf lists an enum's names for an error, leaving out the zero value,
// which means "not set".
func useOneOf(e protoreflect.EnumDescriptor) string {
	var names []string
	vals := e.Values()
	for i := range vals.Len() {
		if vals.Get(i).Number() != 0 {
			names = append(names, string(vals.Get(i).Name()))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; use one of " + strings.Join(names, ", ")
}

// step is one step of a field path: a field, a list index or a map key.
type step struct {
	name    string
	index   int
	isIndex bool
	isKey   bool
}

// path is a field path, rendered as contract.acceptance_criteria[0].expression.
type path []step

func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.isIndex:
			fmt.Fprintf(&b, "[%d]", s.index)
		case s.isKey:
			b.WriteString("[" + echo(s.name) + "]")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(echo(s.name))
		}
	}
	return capPath(b.String())
}

// Bounds on what a refusal echoes: an answer must not grow with the input.
const (
	maxEcho  = errs.MaxEcho // one value or key from the request
	maxPath  = 256          // a whole field path; its end, which names the field, is kept
	maxWords = 512          // a whole description
)

// echo makes a value from the request fit to quote: control and bidi
// characters escaped, cut to maxEcho bytes.
func echo(s string) string { return errs.Cut(terminal.EscapeLine(s), maxEcho) }

// capPath keeps the last maxPath bytes of a path, where the field is named.
func capPath(s string) string {
	if len(s) <= maxPath {
		return s
	}
	cut := len(s) - maxPath
	for cut < len(s) && !isRuneStart(s[cut]) {
		cut++
	}
	return "…" + s[cut:]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
