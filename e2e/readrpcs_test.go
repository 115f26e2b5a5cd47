package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	_ "github.com/steward-run/steward/pkg/gen/steward/v1" // registers the descriptors readRPCs reads
	"github.com/steward-run/steward/pkg/stewardtest"
)

// readRPCs are the read RPCs of every Steward service, as the generated
// descriptors declare them: a method marked NO_SIDE_EFFECTS, or one that
// streams its answer (WatchTask, ReplayTask). A new read RPC joins the walk
// (walkReads) without a line here. The others change state, and are
// called by whom the task names or whom a role lets act (pkg/access): not
// what a stranger to the task reads.
func readRPCs(t *testing.T) []protoreflect.MethodDescriptor {
	t.Helper()
	var out []protoreflect.MethodDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("steward.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			ms := f.Services().Get(i).Methods()
			for j := range ms.Len() {
				m := ms.Get(j)
				opts, _ := m.Options().(*descriptorpb.MethodOptions)
				if opts.GetIdempotencyLevel() == descriptorpb.MethodOptions_NO_SIDE_EFFECTS || m.IsStreamingServer() {
					out = append(out, m)
				}
			}
		}
		return true
	})
	if len(out) < 15 {
		t.Fatalf("the descriptors declare %d read RPCs; Steward has at least 15", len(out))
	}
	return out
}

// walkReads calls every read RPC as token, once for each id of c each of
// its request's fields can name (task_id, action_id, approval_id, name),
// and records the content each answer holds.
func walkReads(t *testing.T, url, token string, c taskContent) walk {
	t.Helper()
	w := walk{who: token, calls: map[string]int{}, answered: map[string]int{}, found: map[string][]string{}}
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, m := range readRPCs(t) {
		name := string(m.Name())
		client := connect.NewClient[dynamicpb.Message, dynamicpb.Message](hc, url+"/"+string(m.Parent().FullName())+"/"+name,
			connect.WithSchema(m), connect.WithInterceptors(stewardtest.Bearer(token)),
			connect.WithResponseInitializer(func(spec connect.Spec, msg any) error {
				*msg.(*dynamicpb.Message) = *dynamicpb.NewMessage(spec.Schema.(protoreflect.MethodDescriptor).Output())
				return nil
			}))
		for _, req := range requestsFor(m, c) {
			answers, err := call(client, m, req)
			if connect.CodeOf(err) == connect.CodeDeadlineExceeded {
				t.Errorf("%s as %s: %v", name, token, err)
			}
			w.calls[name]++
			for _, a := range answers {
				w.answered[name]++
				w.look(name, c, a, "")
			}
			if err != nil {
				w.look(name, c, dynamicpb.NewMessage(m.Output()), err.Error())
			}
		}
	}
	return w
}

// requestsFor returns m's requests naming what c holds: one per action,
// approval or name where m's request has such a field, and the task's id
// in task_id.
func requestsFor(m protoreflect.MethodDescriptor, c taskContent) []*dynamicpb.Message {
	fields := m.Input().Fields()
	base := dynamicpb.NewMessage(m.Input())
	if f := fields.ByName("task_id"); f != nil {
		base.Set(f, protoreflect.ValueOfString(c.taskID))
	}
	out := []*dynamicpb.Message{base}
	for field, ids := range map[protoreflect.Name][]string{"action_id": c.actionIDs, "approval_id": c.approvalIDs, "name": c.names} {
		f := fields.ByName(field)
		if f == nil || f.Kind() != protoreflect.StringKind {
			continue
		}
		var each []*dynamicpb.Message
		for _, req := range out {
			for _, id := range ids {
				r := dynamicpb.NewMessage(m.Input())
				req.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool { r.Set(fd, v); return true })
				r.Set(f, protoreflect.ValueOfString(id))
				each = append(each, r)
			}
		}
		out = each
	}
	return out
}

// call makes one call of m and returns its answers: one, or a stream's
// messages until it ends or, for a stream that follows (WatchTask), until
// it has sent the event at the last sequence its first message names.
func call(client *connect.Client[dynamicpb.Message, dynamicpb.Message], m protoreflect.MethodDescriptor, req *dynamicpb.Message) ([]*dynamicpb.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !m.IsStreamingServer() {
		resp, err := client.CallUnary(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return []*dynamicpb.Message{resp.Msg}, nil
	}
	stream, err := client.CallServerStream(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var out []*dynamicpb.Message
	var last uint64
	for stream.Receive() {
		out = append(out, stream.Msg())
		if caughtUp(stream.Msg(), &last) {
			return out, nil // a watch follows until it is let go
		}
	}
	return out, stream.Err()
}

// caughtUp reports whether msg, a message of a stream that follows, is
// the event at the last sequence the stream's first message named (kept in
// last), or that first message of a task with no events.
func caughtUp(msg *dynamicpb.Message, last *uint64) bool {
	fields := msg.Descriptor().Fields()
	lastSeq, record := fields.ByName("last_sequence"), fields.ByName("record")
	if lastSeq == nil || record == nil {
		return false // a stream that ends (ReplayTask)
	}
	if !msg.Has(record) {
		*last = msg.Get(lastSeq).Uint()
		return *last == 0
	}
	rec := msg.Get(record).Message()
	return rec.Get(rec.Descriptor().Fields().ByName("sequence")).Uint() >= *last
}
