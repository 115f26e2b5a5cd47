package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	_ "github.com/steward-run/steward/pkg/gen/steward/v1" // registers the services walked below
)

// TestStrictDecodingOfEveryField sends every RPC of every Steward service
// a request with something its schema does not define, in every message
// its request can reach: an unknown field, a misspelt enum name and an
// undefined enum number, in JSON over Connect and in binary over gRPC. The
// services and fields are found by reflection, so an RPC added later is
// covered without touching this test. Every probe must be invalid_argument
// with a BadRequest detail naming the field's path.
func TestStrictDecodingOfEveryField(t *testing.T) {
	p := startBinary(t, t.TempDir())
	hc := &http.Client{Timeout: 30 * time.Second}
	var methods, probes, enums int
	protoregistry.GlobalFiles.RangeFilesByPackage("steward.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			svc := fd.Services().Get(i)
			for j := range svc.Methods().Len() {
				m := svc.Methods().Get(j)
				methods++
				for _, pr := range probesOf(m.Input()) {
					probes++
					if pr.enum {
						enums++
					}
					t.Run(fmt.Sprintf("%s/%s/%s", m.Name(), pr.encoding, pr.name), func(t *testing.T) {
						checkRefused(t, hc, p.url, m, pr)
					})
				}
			}
		}
		return true
	})
	// The floor guards the walk itself: a walk that found nothing would
	// pass vacuously.
	if methods < 30 || probes < 100 || enums < 20 {
		t.Fatalf("walked %d methods, %d probes, %d of them enums: the walk is broken", methods, probes, enums)
	}
	t.Logf("%d methods, %d probes (%d on enums)", methods, probes, enums)
}

// probe is one bad request and the field it must be refused on.
type probe struct {
	name     string
	encoding string // "json" (Connect) or "proto" (gRPC)
	body     []byte
	field    string
	enum     bool
}

// step is one way down from a message to a message (or enum) it holds.
type step struct {
	fd protoreflect.FieldDescriptor
}

// probesOf returns the probes for every message reachable from md.
func probesOf(md protoreflect.MessageDescriptor) []probe {
	var out []probe
	var walk func(md protoreflect.MessageDescriptor, path []step, seen map[protoreflect.FullName]bool)
	walk = func(md protoreflect.MessageDescriptor, path []step, seen map[protoreflect.FullName]bool) {
		out = append(out, unknownFieldProbes(md, path)...)
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			elem := fd
			if fd.IsMap() {
				elem = fd.MapValue()
			}
			switch {
			case elem.Kind() == protoreflect.EnumKind:
				out = append(out, enumProbes(append(path, step{fd}))...)
			case elem.Message() != nil && !seen[elem.Message().FullName()] && elem.Message().FullName().Parent() != "google.protobuf":
				seen[elem.Message().FullName()] = true
				walk(elem.Message(), append(path[:len(path):len(path)], step{fd}), seen)
				delete(seen, elem.Message().FullName())
			}
		}
	}
	walk(md, nil, map[protoreflect.FullName]bool{md.FullName(): true})
	return out
}

// fieldPath is how Steward names the field at the end of path.
func fieldPath(path []step) string {
	var b strings.Builder
	for i, s := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(string(s.fd.Name()))
		switch {
		case s.fd.IsList():
			b.WriteString("[0]")
		case s.fd.IsMap():
			b.WriteString("[" + mapKey(s.fd).String() + "]")
		}
	}
	return b.String()
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// jsonAt wraps inner (the JSON of the innermost value) in the objects,
// arrays and maps that path goes through.
func jsonAt(path []step, inner string) string {
	for i := len(path) - 1; i >= 0; i-- {
		fd := path[i].fd
		switch {
		case fd.IsList():
			inner = "[" + inner + "]"
		case fd.IsMap():
			inner = fmt.Sprintf("{%q: %s}", mapKey(fd).String(), inner)
		}
		inner = fmt.Sprintf("{%q: %s}", fd.JSONName(), inner)
	}
	return inner
}

// mapKey is a valid key of map field fd.
func mapKey(fd protoreflect.FieldDescriptor) protoreflect.MapKey {
	switch fd.MapKey().Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("k").MapKey()
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true).MapKey()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(1).MapKey()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(1).MapKey()
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(1).MapKey()
	default:
		return protoreflect.ValueOfInt64(1).MapKey()
	}
}

// binaryAt builds root with the messages along path set, calls last on the
// innermost message (or, for an enum step, sets the value), and marshals it.
func binaryAt(root protoreflect.MessageDescriptor, path []step, last func(protoreflect.Message), enum protoreflect.EnumNumber) []byte {
	msg := dynamicpb.NewMessage(root)
	cur := protoreflect.Message(msg)
	for _, s := range path {
		fd := s.fd
		elem := fd
		if fd.IsMap() {
			elem = fd.MapValue()
		}
		var v protoreflect.Value
		var next protoreflect.Message
		if elem.Kind() == protoreflect.EnumKind {
			v = protoreflect.ValueOfEnum(enum)
		} else {
			next = dynamicpb.NewMessage(elem.Message())
			v = protoreflect.ValueOfMessage(next)
		}
		switch {
		case fd.IsList():
			l := cur.Mutable(fd).List()
			l.Append(v)
		case fd.IsMap():
			cur.Mutable(fd).Map().Set(mapKey(fd), v)
		default:
			cur.Set(fd, v)
		}
		if next != nil {
			cur = next
		}
	}
	if last != nil {
		last(cur)
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		panic(err)
	}
	return b
}

func unknownFieldProbes(md protoreflect.MessageDescriptor, path []step) []probe {
	root := md
	if len(path) > 0 {
		root = path[0].fd.ContainingMessage()
	}
	where := fieldPath(path)
	const number = 4242 // no Steward message has this many fields
	raw := protowire.AppendVarint(protowire.AppendTag(nil, number, protowire.VarintType), 1)
	return []probe{
		{
			name: "unknown field in " + orTop(where), encoding: "json",
			body:  []byte(jsonAt(path, `{"notAField": 1}`)),
			field: join(where, "notAField"),
		},
		{
			name: "unknown field in " + orTop(where), encoding: "proto",
			body:  binaryAt(root, path, func(m protoreflect.Message) { m.SetUnknown(raw) }, 0),
			field: join(where, fmt.Sprint(number)),
		},
	}
}

func enumProbes(path []step) []probe {
	root := path[0].fd.ContainingMessage()
	where := fieldPath(path)
	return []probe{
		{name: "misspelt enum " + where, encoding: "json", enum: true, body: []byte(jsonAt(path, `"NOT_A_VALUE_TYPO"`)), field: where},
		{name: "undefined enum number " + where, encoding: "json", enum: true, body: []byte(jsonAt(path, `9999`)), field: where},
		{name: "undefined enum number " + where, encoding: "proto", enum: true, body: binaryAt(root, path, nil, 9999), field: where},
	}
}

func orTop(path string) string {
	if path == "" {
		return "request"
	}
	return path
}

// checkRefused sends pr to method m and checks the answer.
func checkRefused(t *testing.T, hc *http.Client, url string, m protoreflect.MethodDescriptor, pr probe) {
	t.Helper()
	procedure := fmt.Sprintf("/%s/%s", m.Parent().FullName(), m.Name())
	opts := []connect.ClientOption{connect.WithCodec(rawCodec{name: pr.encoding})}
	if pr.encoding == "proto" {
		opts = append(opts, connect.WithGRPC())
	}
	client := connect.NewClient[rawMessage, rawMessage](hc, url+procedure, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var err error
	req := connect.NewRequest(&rawMessage{b: pr.body})
	if m.IsStreamingServer() {
		var stream *connect.ServerStreamForClient[rawMessage]
		stream, err = client.CallServerStream(ctx, req)
		if err == nil {
			for stream.Receive() {
			}
			err = stream.Err()
			stream.Close()
		}
	} else {
		_, err = client.CallUnary(ctx, req)
	}
	var cerr *connect.Error
	if !errors.As(err, &cerr) || cerr.Code() != connect.CodeInvalidArgument {
		t.Fatalf("body %s: got %v, want invalid_argument", pr.body, err)
	}
	if strings.Contains(cerr.Message(), "stewardv1.") || strings.Contains(cerr.Message(), "unmarshal") {
		t.Errorf("message %q leaks the framework's wording", cerr.Message())
	}
	for _, d := range cerr.Details() {
		v, derr := d.Value()
		if br, ok := v.(*errdetails.BadRequest); derr == nil && ok && len(br.FieldViolations) == 1 {
			if got := br.FieldViolations[0].Field; got != pr.field {
				t.Errorf("body %s: refused on %q (%s), want %q", pr.body, got, cerr.Message(), pr.field)
			}
			return
		}
	}
	t.Errorf("body %s: %q carries no BadRequest detail", pr.body, cerr.Message())
}

// rawMessage is a request body as bytes, sent as it is.
type rawMessage struct{ b []byte }

type rawCodec struct{ name string }

func (c rawCodec) Name() string { return c.name }

func (rawCodec) Marshal(m any) ([]byte, error) { return m.(*rawMessage).b, nil }

func (rawCodec) Unmarshal(b []byte, m any) error {
	if pm, ok := m.(proto.Message); ok { // gRPC's status, in an error
		return proto.Unmarshal(b, pm)
	}
	m.(*rawMessage).b = append([]byte(nil), b...)
	return nil
}
