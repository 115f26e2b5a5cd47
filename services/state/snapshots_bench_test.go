package state_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// BenchmarkListPolicySnapshots measures the server's side of a policy
// canary: ListPolicySnapshots streaming 100 and 10,000 snapshots (100 a
// task), each with an input of its own, about 1 KiB, read from the policy
// store. docs/policy-canary.md records the numbers. Run:
//
//	go test -run '^$' -bench ListPolicySnapshots -benchtime 3x ./services/state/
func BenchmarkListPolicySnapshots(b *testing.B) {
	env := stewardtest.NewEnv(b)
	ctx := context.Background()
	kept := env.As("governance").Policy
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const perTask = 100
	for i := range 10_000 / perTask {
		h := running()
		for j := range perTask {
			input := fmt.Sprintf(`{"action":{"action_id":"a%d-%d","params":{"q":%q}}}`, i, j, strings.Repeat("x", 1000))
			hash, err := kept.PutInput(ctx, fmt.Sprint("task-", i), []byte(input))
			if err != nil {
				b.Fatal(err)
			}
			ev := evaluated(fmt.Sprint("a", j), "search", at)
			ev[1].(*stewardv1.PolicyEvaluated).Snapshot.InputHash, ev[1].(*stewardv1.PolicyEvaluated).Snapshot.InputKept = hash, true
			h = append(h, ev...)
		}
		env.Append(fmt.Sprint("task-", i), h...)
	}
	p := state.New(env.Log, env.Logger, state.Config{Policy: env.Policy})
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Stop)
	mux := http.NewServeMux()
	for _, s := range p.Services(rpc.HandlerOptions(env.Logger, nil, nil)) {
		mux.Handle(s.Path, s.Handler)
	}
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	audit := stewardv1connect.NewAuditServiceClient(http.DefaultClient, srv.URL)
	for _, n := range []uint32{100, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				stream, err := audit.ListPolicySnapshots(ctx, connect.NewRequest(&stewardv1.ListPolicySnapshotsRequest{Limit: n}))
				if err != nil {
					b.Fatal(err)
				}
				got := uint32(0)
				for stream.Receive() {
					if len(stream.Msg().Snapshot.Input) > 0 {
						got++
					}
				}
				if err := stream.Err(); err != nil || got != n {
					b.Fatalf("%d snapshots with their inputs, %v; want %d", got, err, n)
				}
				stream.Close()
			}
		})
	}
}
