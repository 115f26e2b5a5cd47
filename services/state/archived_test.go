package state_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestArchivedTaskIsServedUnderTheSameRules: a task only the archive
// holds (its log is another's) is served by GetTask, GetReceipt and
// ReplayTask from the archive, with the same rules as a task on the log:
// its requester reads its events exactly as stored and its inline result;
// a stranger sees that there is a result, not what it is, and may not
// replay the events that carry it; a task in neither is not found.
func TestArchivedTaskIsServedUnderTheSameRules(t *testing.T) {
	ctx := context.Background()
	old := stewardtest.NewEnv(t)
	result := []byte(`{"ssn":"123-45-6789"}`)
	h := []event.Payload{&stewardv1.TaskCreated{Contract: contract(1)}, &stewardv1.TaskStarted{}}
	h = append(h, act("a1", "lookup", "crm", "r1")...)
	old.Append("t1", append(h, resultOutcome(t, old, "a1", result))...)
	raws, err := old.Log.ReadRaw(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	bt := &stewardv1.BundleTask{TaskId: "t1"}
	for _, r := range raws {
		bt.Events = append(bt.Events, &stewardv1.BundleEvent{Sequence: r.Sequence, Data: r.Data})
	}
	store, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	arch := archive.New(store)
	if err := arch.Put(ctx, "t1", "", &stewardv1.AuditBundle{Tasks: []*stewardv1.BundleTask{bt}}); err != nil {
		t.Fatal(err)
	}

	env := stewardtest.NewEnv(t) // whose log never held t1
	p := startPlane(t, env.Log, env.Logger, state.Config{Results: env.Results, Digest: testSealer(t).Digest, Archive: arch})
	mux := http.NewServeMux()
	tokens := rpc.Tokens{"token-of-user:eve-0123456789": {Principal: "user:eve"}, "token-of-user:a-0123456789": {Principal: "user:a"}}
	for _, s := range p.Services(rpc.HandlerOptions(env.Logger, tokens, nil)) {
		mux.Handle(s.Path, s.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	as := func(token string) (stewardv1connect.QueryServiceClient, stewardv1connect.AuditServiceClient) {
		o := connect.WithInterceptors(stewardtest.Bearer(token))
		return stewardv1connect.NewQueryServiceClient(srv.Client(), srv.URL, o), stewardv1connect.NewAuditServiceClient(srv.Client(), srv.URL, o)
	}

	aq, aa := as("token-of-user:a-0123456789")
	got, err := aq.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
	if err != nil || !bytes.Equal(got.Msg.Task.Actions[0].Outcome.GetResult(), result) {
		t.Fatalf("the requester's GetTask from the archive: %v, %v", got, err)
	}
	if r, err := aq.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: "t1"})); err != nil || r.Msg.Receipt.TaskId != "t1" {
		t.Errorf("GetReceipt from the archive: %v", err)
	}
	stream, err := aa.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; stream.Receive(); n++ {
		if !bytes.Equal(stream.Msg().Data, raws[n].Data) || stream.Msg().Record.Sequence != raws[n].Sequence {
			t.Errorf("replayed event %d differs from the stored one", n)
		}
	}
	if stream.Err() != nil || n != len(raws) {
		t.Errorf("ReplayTask from the archive: %d of %d events, %v", n, len(raws), stream.Err())
	}

	eq, ea := as("token-of-user:eve-0123456789")
	got, err = eq.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
	if err != nil || len(got.Msg.Task.Actions[0].Outcome.GetResult()) != 0 || got.Msg.Task.Actions[0].Outcome.GetResultHash() == "" {
		t.Errorf("a stranger's GetTask from the archive shows the result: %v, %v", got, err)
	}
	if err := drainReplay(ea.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: "t1"}))); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("a stranger's ReplayTask from the archive: %v, want permission_denied", err)
	}
	if _, err := aq.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t2"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("GetTask of a task in neither: %v, want not_found", err)
	}
}

func drainReplay(s *connect.ServerStreamForClient[stewardv1.ReplayTaskResponse], err error) error {
	if err != nil {
		return err
	}
	defer s.Close()
	for s.Receive() {
	}
	return s.Err()
}
