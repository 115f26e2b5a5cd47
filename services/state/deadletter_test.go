package state_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestOperatorsListAndReplayDeadLetters serves the state plane behind
// tokens over a real bus, where a reaction consumer fails for good on a
// task's start: the default tenant's operator lists the record and, once
// the cause is gone, replays it, and the reaction runs once more; a
// tenant's operator is refused both, and bad paging is refused.
func TestOperatorsListAndReplayDeadLetters(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ctx := context.Background()
	var calls atomic.Int32
	var broken atomic.Bool
	broken.Store(true)
	sub, err := env.Log.React(ctx, "flaky", eventlog.OnRecord[*stewardv1.TaskStarted](func(context.Context, *stewardv1.EventRecord) error {
		calls.Add(1)
		if broken.Load() {
			return errs.New(errs.FailedPrecondition, "the cause is still there")
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	tokens := rpc.Tokens{
		"token-of-ops-0123456789":      {Principal: "user:ops", Roles: []string{state.OperatorRole}},
		"token-of-acme-ops-0123456789": {Principal: "user:ops", Roles: []string{state.OperatorRole}, Tenant: "acme"},
	}
	p := startPlane(t, env.Log, env.Logger, state.Config{})
	mux := http.NewServeMux()
	for _, s := range p.Services(rpc.HandlerOptions(env.Logger, tokens, nil)) {
		mux.Handle(s.Path, s.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := func(token string) stewardv1connect.DeadLetterServiceClient {
		return stewardv1connect.NewDeadLetterServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(stewardtest.Bearer(token)))
	}
	ops, acme := client("token-of-ops-0123456789"), client("token-of-acme-ops-0123456789")

	env.Append("t1", &stewardv1.TaskCreated{Contract: contract(1)}, &stewardv1.TaskStarted{})
	list := func() []*stewardv1.DeadLetter {
		resp, err := ops.ListDeadLetters(ctx, connect.NewRequest(&stewardv1.ListDeadLettersRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Msg.DeadLetters
	}
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) { return len(list()) == 1, "no dead letter listed" })
	d := list()[0]
	if d.Consumer != "flaky" || d.TaskId != "t1" || d.EventType != "task.started" || d.State != stewardv1.DeadLetterState_DEAD_LETTER_STATE_WAITING {
		t.Fatalf("dead letter: %v", d)
	}

	if _, err := acme.ListDeadLetters(ctx, connect.NewRequest(&stewardv1.ListDeadLettersRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("a tenant's operator lists: %v", err)
	}
	if _, err := acme.ReplayDeadLetter(ctx, connect.NewRequest(&stewardv1.ReplayDeadLetterRequest{Sequence: d.Sequence, Consumer: d.Consumer})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("a tenant's operator replays: %v", err)
	}
	for _, bad := range []*stewardv1.ListDeadLettersRequest{{PageSize: -1}, {PageSize: state.MaxDeadLetterPage + 1}, {PageToken: "bm90IG91cnM"}} {
		if _, err := ops.ListDeadLetters(ctx, connect.NewRequest(bad)); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("list %v: %v, want invalid_argument", bad, err)
		}
	}

	broken.Store(false)
	if _, err := ops.ReplayDeadLetter(ctx, connect.NewRequest(&stewardv1.ReplayDeadLetterRequest{Sequence: d.Sequence, Consumer: d.Consumer})); err != nil {
		t.Fatal(err)
	}
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		return list()[0].State == stewardv1.DeadLetterState_DEAD_LETTER_STATE_REPLAYED, "not replayed: " + list()[0].State.String()
	})
	if n := calls.Load(); n != 2 {
		t.Fatalf("the reaction ran %d times, want 2", n)
	}
	_, err = ops.ReplayDeadLetter(ctx, connect.NewRequest(&stewardv1.ReplayDeadLetterRequest{Sequence: d.Sequence, Consumer: d.Consumer}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("a second replay: %v, want failed_precondition", err)
	}
	_, err = ops.ReplayDeadLetter(ctx, connect.NewRequest(&stewardv1.ReplayDeadLetterRequest{Sequence: d.Sequence, Consumer: "no.such"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("a replay to a consumer that is no name: %v, want invalid_argument", err)
	}
}
