package rpc

import (
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// jsonWorstCase is how many times its protobuf size a message's JSON may
// weigh: a control character in a string is one byte in binary and six
// (\u0001) in JSON.
const jsonWorstCase = 6

// sentAsJSON reports whether an answer to a request with header h is
// encoded in JSON (Connect, gRPC or gRPC-Web).
func sentAsJSON(h http.Header) bool {
	return strings.Contains(h.Get("Content-Type"), "json")
}

// Weigher weighs an item of a page as its answer is encoded, with its
// place in the page.
type Weigher func(proto.Message) int

// jsonItemBytes is what m weighs in JSON: its encoding and a comma.
func jsonItemBytes(m proto.Message) int {
	b, err := protojson.Marshal(m)
	if err != nil {
		return jsonWorstCase * proto.Size(m)
	}
	return len(b) + 1
}

// PageWeigher returns the Weigher of a page answering a request with
// header h: a JSON item is counted at its worst case, six times its
// binary size, so that a JSON page too stays within MaxPageBytes.
// Measuring each item's JSON would cost an encoding of every item, and
// garbage of a page's size, on every call.
func PageWeigher(h http.Header) Weigher {
	if sentAsJSON(h) {
		return jsonPageItemBytes
	}
	return PageItemBytes
}

// jsonPageItemBytes is what m weighs as an item of a JSON page, at worst.
func jsonPageItemBytes(m proto.Message) int { return jsonWorstCase * PageItemBytes(m) }

// encodedSize is m's size as the answer to req is encoded.
func encodedSize(req connect.AnyRequest, m proto.Message) int {
	n := proto.Size(m)
	if !sentAsJSON(req.Header()) || n*jsonWorstCase <= MaxResponseBytes {
		return n
	}
	return jsonItemBytes(m)
}

// lighten answers a change with the task's summary (task.Summary) in
// place of the task when the whole answer would pass MaxResponseBytes as
// encoded: the change has committed, and the send limit would tell the
// caller it failed (a retry would be told the same). Reads are left
// alone: GetTask refuses a task past the bound before building it.
func lighten(req connect.AnyRequest, m proto.Message) {
	if req.Spec().IdempotencyLevel == connect.IdempotencyNoSideEffects {
		return
	}
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("task")
	if fd == nil || fd.Message() == nil || fd.Message().FullName() != (*stewardv1.Task)(nil).ProtoReflect().Descriptor().FullName() || !r.Has(fd) {
		return
	}
	if encodedSize(req, m) <= MaxResponseBytes {
		return
	}
	t, ok := r.Get(fd).Message().Interface().(*stewardv1.Task)
	if ok {
		r.Set(fd, protoreflect.ValueOfMessage(task.Summary(t).ProtoReflect()))
	}
}
