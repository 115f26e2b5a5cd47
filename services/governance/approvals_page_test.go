package governance_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestListApprovalsPagesByCountAndBytes: approvals whose parameters
// together pass rpc.MaxPageBytes come in pages that end before the one
// that would pass it, each with a token to the next; a page size cuts
// pages by count the same way; every approval is listed once, in order.
func TestListApprovalsPagesByCountAndBytes(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	const approvals = 12
	var want []string
	for i := range approvals {
		id := e.proposeAction(t, "t", fmt.Sprint("w", i), "wire", "", "agent", map[string]any{"memo": strings.Repeat("m", 300<<10)})
		e.waitStatus("t", id, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
		want = append(want, id)
	}
	mux := http.NewServeMux()
	for _, s := range e.plane.Services(rpc.HandlerOptions(e.Logger, nil, nil)) {
		mux.Handle(s.Path, s.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := stewardv1connect.NewGovernanceServiceClient(srv.Client(), srv.URL)

	list := func(size int32) (ids []string, pages int) {
		t.Helper()
		token := ""
		for {
			resp, err := client.ListApprovals(context.Background(), connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: "t", PageSize: size, PageToken: token}))
			if err != nil {
				t.Fatal(err)
			}
			if n := proto.Size(resp.Msg); n > rpc.MaxPageBytes {
				t.Fatalf("a page of %d approvals weighs %d bytes, past the %d of a page", len(resp.Msg.Approvals), n, rpc.MaxPageBytes)
			}
			for _, ap := range resp.Msg.Approvals {
				ids = append(ids, ap.ActionId)
			}
			pages++
			if token = resp.Msg.NextPageToken; token == "" {
				return ids, pages
			}
		}
	}
	if ids, pages := list(0); fmt.Sprint(ids) != fmt.Sprint(want) || pages < 2 {
		t.Errorf("by bytes: %d pages of %v; want every approval once, in order, in pages of at most 2 MiB", pages, ids)
	}
	if ids, pages := list(1); fmt.Sprint(ids) != fmt.Sprint(want) || pages != approvals {
		t.Errorf("by one: %d pages of %v; want one approval a page", pages, ids)
	}
	_, err := client.ListApprovals(context.Background(), connect.NewRequest(&stewardv1.ListApprovalsRequest{PageToken: "nope"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "page_token") {
		t.Errorf("a page token the server did not issue: %v; want invalid_argument on page_token", err)
	}
	_, err = client.ListApprovals(context.Background(), connect.NewRequest(&stewardv1.ListApprovalsRequest{PageSize: 1001}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "page_size") {
		t.Errorf("a page size of 1001: %v; want invalid_argument on page_size", err)
	}
}
