package rpc_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAConnectionHoldsNoMoreThanItsResponseBudget: one HTTP/2 connection
// that opens no window and asks for ten answers of 1 MiB, against a
// budget of 4 MiB a connection (each answer counts twice), has two of
// them built at any time; the other handlers wait to build theirs, and a
// second connection is served all the same.
func TestAConnectionHoldsNoMoreThanItsResponseBudget(t *testing.T) {
	const answer = 1 << 20
	var waiting, built, peak atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		waiting.Add(1)
		shrink, err := rpc.Reserve(r.Context(), answer)
		waiting.Add(-1)
		if err != nil {
			return
		}
		shrink(answer)
		n := built.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		defer built.Add(-1)
		_, _ = w.Write(make([]byte, answer))
	})
	srv, err := rpc.Listen("127.0.0.1:0", []rpc.Service{{Name: "t.v1.T", Path: "/t.v1.T/", Handler: h}}, rpc.WithConnResponseBytes(4*answer))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	stewardtest.ZeroWindowStreams(t, srv.Addr(), "/t.v1.T/Get", nil, 10)
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return built.Load() == 2 && waiting.Load() == 8, fmt.Sprintf("%d answers built, %d handlers waiting", built.Load(), waiting.Load())
	})
	resp, err := http.Post(srv.URL()+"/t.v1.T/Get", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p := peak.Load(); p > 3 {
		t.Fatalf("%d answers of 1 MiB were built at once; the stalled connection's budget allows 2, another connection's 1", p)
	}
}
