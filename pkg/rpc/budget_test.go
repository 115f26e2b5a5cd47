package rpc_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
)

const budgetAnswer = 1 << 20

// budgetServer serves GetTask with a task of about budgetAnswer/2 bytes,
// whose handler reserves nothing itself, with a connection's budget of
// conn bytes and the server's b.
func budgetServer(t *testing.T, conn int64, b *rpc.ResponseBudget) *rpc.Server {
	t.Helper()
	task := &stewardv1.Task{Contract: &stewardv1.TaskContract{Intent: strings.Repeat("g", budgetAnswer/2-64)}}
	path, h := "/steward.v1.QueryService/GetTask", connect.NewUnaryHandler("/steward.v1.QueryService/GetTask",
		func(context.Context, *connect.Request[stewardv1.GetTaskRequest]) (*connect.Response[stewardv1.GetTaskResponse], error) {
			return connect.NewResponse(&stewardv1.GetTaskResponse{Task: task}), nil
		}, rpc.HandlerOptions(slog.New(slog.DiscardHandler), nil, nil)...)
	srv, err := rpc.Listen("127.0.0.1:0", []rpc.Service{{Name: "steward.v1.QueryService", Path: path, Handler: h}},
		rpc.WithConnResponseBytes(conn), rpc.WithResponseBudget(b))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv
}

// TestAConnectionHoldsNoMoreThanItsResponseBudget: one HTTP/2 connection
// that opens no window and asks for ten answers of about 0.5 MiB (1 MiB
// reserved each), against a budget of 4 MiB a connection, has four of
// them reserved at any time — though the handler reserves nothing itself
// — and the other six wait to be encoded; a second connection is served
// all the same.
func TestAConnectionHoldsNoMoreThanItsResponseBudget(t *testing.T) {
	b := rpc.NewResponseBudget(rpc.DefaultServerResponseBytes)
	srv := budgetServer(t, 4*budgetAnswer, b)
	stewardtest.ZeroWindowStreams(t, srv.Addr(), "/steward.v1.QueryService/GetTask", []byte(`{}`), 10)
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return b.Waiting() == 6, fmt.Sprintf("%d bytes held, %d answers waiting", b.Held(), b.Waiting())
	})
	if h := b.Held(); h > 4*budgetAnswer {
		t.Fatalf("one stalled connection holds %d bytes; its budget is %d", h, 4*budgetAnswer)
	}
	resp, err := http.Post(srv.URL()+"/steward.v1.QueryService/GetTask", "application/json", strings.NewReader(`{}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("another connection's GetTask: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestConnectionsTogetherHoldNoMoreThanTheServersBudget: two stalled
// connections of 4 MiB each, against a server's budget of 6 MiB, hold 6
// MiB together, and the rest of their answers wait.
func TestConnectionsTogetherHoldNoMoreThanTheServersBudget(t *testing.T) {
	b := rpc.NewResponseBudget(6 * budgetAnswer)
	srv := budgetServer(t, 4*budgetAnswer, b)
	for range 2 {
		stewardtest.ZeroWindowStreams(t, srv.Addr(), "/steward.v1.QueryService/GetTask", []byte(`{}`), 10)
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return b.Waiting() == 14, fmt.Sprintf("%d bytes held, %d answers waiting", b.Held(), b.Waiting())
	})
	if h := b.Held(); h > 6*budgetAnswer {
		t.Fatalf("two stalled connections hold %d bytes; the server's budget is %d", h, 6*budgetAnswer)
	}
}
