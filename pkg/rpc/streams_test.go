package rpc_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/access"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// heldWatches answers WatchTask once and holds the stream until its
// client leaves, as a watch of a quiet task does.
type heldWatches struct {
	stewardv1connect.UnimplementedQueryServiceHandler
}

func (heldWatches) WatchTask(ctx context.Context, _ *connect.Request[stewardv1.WatchTaskRequest], s *connect.ServerStream[stewardv1.WatchTaskResponse]) error {
	if err := s.Send(&stewardv1.WatchTaskResponse{LastSequence: 1}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// TestStreamsPerCaller: a caller holding the most streams is refused one
// more, ResourceExhausted, while another caller (the same principal of
// another tenant too) is not; closing one lets the first open another.
func TestStreamsPerCaller(t *testing.T) {
	tokens := rpc.Tokens{
		"acme-agent-token-0123456789":   {Principal: "agent:a", Tenant: "acme"},
		"globex-agent-token-0123456789": {Principal: "agent:a", Tenant: "globex"},
	}
	parties := func(context.Context, string) (access.TaskParties, error) {
		return access.TaskParties{Agents: []string{"agent:a"}}, nil
	}
	opts := rpc.HandlerOptions(slog.New(slog.DiscardHandler), tokens, parties, rpc.WithStreamsPerCaller(2))
	mux := http.NewServeMux()
	mux.Handle(stewardv1connect.NewQueryServiceHandler(heldWatches{}, opts...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := stewardv1connect.NewQueryServiceClient(srv.Client(), srv.URL)

	// watch opens a stream and waits for its first answer: it is then
	// counted, or it was refused.
	watch := func(token string) (func(), error) {
		ctx, cancel := context.WithCancel(context.Background())
		req := connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: "t1"})
		req.Header().Set("Authorization", "Bearer "+token)
		s, err := client.WatchTask(ctx, req)
		if err == nil && !s.Receive() {
			err = s.Err()
		}
		if err != nil {
			cancel()
			return nil, err
		}
		return func() { cancel(); _ = s.Close() }, nil
	}
	var held []func()
	for range 2 {
		c, err := watch("acme-agent-token-0123456789")
		if err != nil {
			t.Fatalf("a stream within the bound: %v", err)
		}
		held = append(held, c)
	}
	if _, err := watch("acme-agent-token-0123456789"); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("a third stream of one caller: %v; want resource_exhausted", err)
	}
	other, err := watch("globex-agent-token-0123456789")
	if err != nil {
		t.Fatalf("another tenant's caller of the same name: %v", err)
	}
	defer other()
	held[0]()
	// The handler returns once its client has gone; until then the stream
	// is still held, so wait for the count to fall rather than for time.
	for {
		c, err := watch("acme-agent-token-0123456789")
		if err == nil {
			c()
			break
		}
		if connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("after closing one: %v", err)
		}
	}
	held[1]()
}
