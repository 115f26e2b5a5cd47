package rpc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// requestTypes is the request message of every RPC of every Steward
// service, found in the registry, so that an RPC added later is fuzzed
// without touching this file.
func requestTypes(tb testing.TB) []protoreflect.MessageType {
	tb.Helper()
	seen := map[protoreflect.FullName]bool{}
	var out []protoreflect.MessageType
	fd := stewardv1.File_steward_v1_task_service_proto // links the package in
	protoregistry.GlobalFiles.RangeFilesByPackage(fd.Package(), func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			methods := f.Services().Get(i).Methods()
			for j := range methods.Len() {
				name := methods.Get(j).Input().FullName()
				if seen[name] {
					continue
				}
				seen[name] = true
				mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
				if err != nil {
					tb.Fatal(err)
				}
				out = append(out, mt)
			}
		}
		return true
	})
	if len(out) < 30 {
		tb.Fatalf("found %d request types; the registry lookup is broken", len(out))
	}
	return out
}

// FuzzRequestDecoding decodes the same bytes into the request of every
// RPC, as JSON or as binary protobuf, with the edge's own strict codec,
// then runs the edge's pure checks on what it accepts. A refused request
// leaves the handler nothing to act on and answers InvalidArgument with a
// message that is bounded and valid UTF-8. An accepted one holds nothing
// the schema does not define, comes back equal through both encodings
// (so a client in either reads what was meant), and passes or fails the
// edge's limit check naming a field.
func FuzzRequestDecoding(f *testing.F) {
	for _, br := range stewardtest.BadRequests(f, 4<<10) {
		f.Add(br.Body, br.Binary)
	}
	for _, ok := range []string{
		`{}`,
		`{"contract": {"intent": "tidy", "desiredOutcome": "done", "requesterRef": "alice", "accountableOwnerRef": "alice", "riskTier": "RISK_TIER_LOW", "allowedTools": ["w@1"], "budget": {"maxTokens": "10"}, "deadline": "2030-01-01T00:00:00Z"}}`,
		`{"taskId": "t1", "tool": "w", "params": {"a": [1, 2.5, null, {"b": true}]}, "retryPolicy": {"initialBackoff": "1s"}}`,
		`{"statuses": ["TASK_STATUS_RUNNING"], "pageSize": 10}`,
	} {
		f.Add([]byte(ok), false)
	}
	types := requestTypes(f)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, body []byte, binary bool) {
		codec := "json"
		if binary {
			codec = "proto"
		}
		for _, mt := range types {
			m := mt.New().Interface()
			if err := Decode(codec, body, m); err != nil {
				checkRefused(t, m, err)
				continue
			}
			checkAccepted(t, m, log)
		}
	})
}

// checkRefused checks a request the codec refused: empty but for the
// reason, answered InvalidArgument in a bounded, printable message.
func checkRefused(t *testing.T, m proto.Message, err error) {
	t.Helper()
	var cerr *connect.Error
	if !errors.As(err, &cerr) || cerr.Code() != connect.CodeInvalidArgument {
		t.Fatalf("%s: refused with %v, want invalid_argument", m.ProtoReflect().Descriptor().Name(), err)
	}
	rest := proto.Clone(m)
	rest.ProtoReflect().SetUnknown(nil)
	if proto.Size(rest) != 0 {
		t.Fatalf("%s: a refused request still holds %v", m.ProtoReflect().Descriptor().Name(), rest)
	}
	msg := cerr.Message()
	if !utf8.ValidString(msg) || len(msg) > maxRefusal {
		t.Fatalf("%s: refusal of %d bytes (limit %d), valid UTF-8 %t: %q", m.ProtoReflect().Descriptor().Name(), len(msg), maxRefusal, utf8.ValidString(msg), msg)
	}
}

// maxRefusal bounds a refusal's message: a field path, a description and
// the words around them.
const maxRefusal = maxPath + maxWords + 2*len("…") + len("request : ")

// checkAccepted checks a request the codec accepted, and runs on it the
// edge's limit check.
func checkAccepted(t *testing.T, m proto.Message, log *slog.Logger) {
	t.Helper()
	name := m.ProtoReflect().Descriptor().Name()
	if bad := checkDefined(m.ProtoReflect()); bad != nil {
		t.Fatalf("%s: accepted, yet %s %s", name, bad.field, bad.description)
	}
	for _, c := range []interface {
		Name() string
		Marshal(any) ([]byte, error)
	}{jsonCodec{name: "json"}, protoCodec{}} {
		data, err := c.Marshal(m)
		if err != nil {
			t.Fatalf("%s: accepted, but does not encode as %s: %v", name, c.Name(), err)
		}
		again := m.ProtoReflect().New().Interface()
		if err := Decode(c.Name(), data, again); err != nil {
			t.Fatalf("%s: accepted, but its own %s encoding %q is refused: %v", name, c.Name(), data, err)
		}
		if !proto.Equal(m, again) {
			t.Fatalf("%s: %s round trip changed the request:\n%v\n%v", name, c.Name(), m, again)
		}
	}
	err := limits.Check(m.ProtoReflect())
	if err == nil {
		return
	}
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.TooLarge || e.Field == "" {
		t.Fatalf("%s: the limit check answered %v, want TooLarge naming a field", name, err)
	}
	if code := connect.CodeOf(ToConnect(context.Background(), log, err)); code != connect.CodeResourceExhausted {
		t.Fatalf("%s: the limit check's answer became %v", name, code)
	}
}
