package governance

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// protoFacts renders m as policies read it: the document protojson writes
// with UseProtoNames and EmitUnpopulated, as encoding/json decodes it, and
// with numbers as OPA takes them (jsonNumber) — walked directly, because
// writing and re-reading the JSON cost more than the evaluation itself.
// TestProtoFactsMatchProtojson holds it to that route. Extensions, which
// no contract has, are left out.
func protoFacts(m protoreflect.Message) (map[string]any, error) {
	v, err := messageFacts(m)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object", m.Descriptor().FullName())
	}
	return obj, nil
}

func messageFacts(m protoreflect.Message) (any, error) {
	desc := m.Descriptor()
	if desc.FullName().Parent() == "google.protobuf" {
		switch desc.Name() {
		case "Timestamp":
			return timestampFacts(m)
		case "Duration":
			return durationFacts(m)
		case "Empty":
			// An ordinary message to protojson.
		default:
			return wellKnownFacts(m)
		}
	}
	fds := desc.Fields()
	out := make(map[string]any, fds.Len())
	for i := range fds.Len() {
		fd := fds.Get(i)
		var v any
		switch {
		case m.Has(fd):
			var err error
			if v, err = fieldFacts(m.Get(fd), fd); err != nil {
				return nil, err
			}
		case fd.ContainingOneof() != nil:
			continue // protojson leaves out an unset oneof member
		case fd.HasPresence():
			v = nil // an unset message: null
		default:
			var err error
			if v, err = fieldFacts(m.Get(fd), fd); err != nil {
				return nil, err
			}
		}
		out[fd.TextName()] = v
	}
	return out, nil
}

func fieldFacts(v protoreflect.Value, fd protoreflect.FieldDescriptor) (any, error) {
	switch {
	case fd.IsList():
		list := v.List()
		out := make([]any, list.Len())
		for i := range list.Len() {
			e, err := singularFacts(list.Get(i), fd)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case fd.IsMap():
		out := make(map[string]any, v.Map().Len())
		var err error
		v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
			out[k.String()], err = singularFacts(e, fd.MapValue())
			return err == nil
		})
		return out, err
	}
	return singularFacts(v, fd)
}

func singularFacts(v protoreflect.Value, fd protoreflect.FieldDescriptor) (any, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool(), nil
	case protoreflect.StringKind:
		if !utf8.ValidString(v.String()) {
			return nil, fmt.Errorf("field %s contains invalid UTF-8", fd.FullName())
		}
		return v.String(), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return json.Number(strconv.FormatInt(v.Int(), 10)), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return json.Number(strconv.FormatUint(v.Uint(), 10)), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.FormatInt(v.Int(), 10), nil // protojson writes 64-bit integers as strings
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10), nil
	case protoreflect.FloatKind:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return floatName(f), nil
		}
		// protojson writes a float's shortest 32-bit digits, which
		// encoding/json reads back as the nearest double to them.
		f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
		return jsonNumber(f), nil
	case protoreflect.DoubleKind:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return floatName(f), nil
		}
		return jsonNumber(f), nil
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes()), nil
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == "google.protobuf.NullValue" {
			return nil, nil
		}
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name()), nil
		}
		return json.Number(strconv.FormatInt(int64(v.Enum()), 10)), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return messageFacts(v.Message())
	}
	return nil, fmt.Errorf("field %s has unknown kind %v", fd.FullName(), fd.Kind())
}

func floatName(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "Infinity"
	}
	return "-Infinity"
}

// jsonNumber is f as OPA turns a float64 into a number (util.RoundTrip),
// so policies see the same number text as when they were handed float64s.
func jsonNumber(f float64) json.Number {
	return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
}

// The ranges and forms below are protojson's (well_known_types.go).
const (
	minTimestampSeconds  = -62135596800
	maxTimestampSeconds  = 253402300799
	maxSecondsInDuration = 315576000000
	maxNanos             = 999999999
)

func secondsAndNanos(m protoreflect.Message) (int64, int64) {
	fds := m.Descriptor().Fields()
	return m.Get(fds.ByNumber(1)).Int(), m.Get(fds.ByNumber(2)).Int()
}

func timestampFacts(m protoreflect.Message) (any, error) {
	secs, nanos := secondsAndNanos(m)
	if secs < minTimestampSeconds || secs > maxTimestampSeconds {
		return nil, fmt.Errorf("google.protobuf.Timestamp: seconds out of range %v", secs)
	}
	if nanos < 0 || nanos > maxNanos {
		return nil, fmt.Errorf("google.protobuf.Timestamp: nanos out of range %v", nanos)
	}
	x := time.Unix(secs, nanos).UTC().Format("2006-01-02T15:04:05.000000000")
	return trimNanos(x) + "Z", nil
}

func durationFacts(m protoreflect.Message) (any, error) {
	secs, nanos := secondsAndNanos(m)
	if secs < -maxSecondsInDuration || secs > maxSecondsInDuration {
		return nil, fmt.Errorf("google.protobuf.Duration: seconds out of range %v", secs)
	}
	if nanos < -maxNanos || nanos > maxNanos {
		return nil, fmt.Errorf("google.protobuf.Duration: nanos out of range %v", nanos)
	}
	if (secs > 0 && nanos < 0) || (secs < 0 && nanos > 0) {
		return nil, fmt.Errorf("google.protobuf.Duration: signs of seconds and nanos do not match")
	}
	sign := ""
	if secs < 0 || nanos < 0 {
		sign, secs, nanos = "-", -secs, -nanos
	}
	return trimNanos(fmt.Sprintf("%s%d.%09d", sign, secs, nanos)) + "s", nil
}

// trimNanos leaves 0, 3, 6 or 9 fractional digits, as protojson does.
func trimNanos(x string) string {
	x = strings.TrimSuffix(x, "000")
	x = strings.TrimSuffix(x, "000")
	return strings.TrimSuffix(x, ".000")
}

// wellKnownFacts takes the JSON route for the well-known types the
// contracts do not use (Any, Struct, wrappers, FieldMask): rare enough
// that matching protojson by construction beats another walker.
func wellKnownFacts(m protoreflect.Message) (any, error) {
	data, err := facts.Marshal(m.Interface())
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return numbersForPolicy(out), nil
}

// facts is how the JSON route renders protos: field names as in the
// .proto files, enums by name, every field present.
var facts = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

// numbersForPolicy replaces, in place, every float64 in v (as decoded by
// encoding/json) with its jsonNumber, and returns v.
func numbersForPolicy(v any) any {
	switch x := v.(type) {
	case float64:
		return jsonNumber(x)
	case map[string]any:
		for k, e := range x {
			x[k] = numbersForPolicy(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersForPolicy(e)
		}
	}
	return v
}
