package rpc_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestEdgeLogsAndCountsDenials: a call the edge refuses, unauthenticated
// or permission_denied, is logged once with its procedure, code, reason
// and (when known) principal, and counted; a call refused for another
// reason (a task not found) or let through is neither. A bearer JWT is
// verified beside the static tokens, and a server with JWTs only is not
// in the open mode.
func TestEdgeLogsAndCountsDenials(t *testing.T) {
	idp := stewardtest.NewJWTIssuer(t, "", "steward", "k1")
	keys, err := rpc.LoadJWKS(idp.WriteJWKS(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := rpc.NewJWTVerifier(keys, rpc.JWTConfig{Audience: "steward"})
	if err != nil {
		t.Fatal(err)
	}
	tokens := rpc.Tokens{"stranger-token-0123456789": {Principal: "user:eve"}}
	parties := func(_ context.Context, taskID string) (access.TaskParties, error) {
		if taskID != "t1" {
			return access.TaskParties{}, errs.New(errs.NotFound, "task %s not found", taskID)
		}
		return access.TaskParties{Agents: []string{"agent:jwt"}}, nil
	}
	var logs syncBuffer
	denied := rpc.NewDeniedCounter()
	serve := func(tokens rpc.Tokens) string {
		opts := rpc.HandlerOptions(slog.New(slog.NewTextHandler(&logs, nil)), tokens, parties, rpc.WithJWT(verifier), rpc.WithDenied(denied))
		mux := http.NewServeMux()
		mux.Handle(stewardv1connect.NewTaskServiceHandler(stewardv1connect.UnimplementedTaskServiceHandler{}, opts...))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	pause := func(url, token, taskID string) error {
		c := stewardv1connect.NewTaskServiceClient(http.DefaultClient, url, connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				req.Header().Set("Authorization", "Bearer "+token)
				return next(ctx, req)
			}
		})))
		_, err := c.PauseTask(context.Background(), connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID}))
		return err
	}
	expired := idp.Claims("agent:jwt")
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	both, jwtOnly := serve(tokens), serve(nil)
	for _, c := range []struct {
		name string
		err  error
		want connect.Code
	}{
		{"no token", pause(both, "", "t1"), connect.CodeUnauthenticated},
		{"an expired JWT", pause(both, idp.Sign(t, expired), "t1"), connect.CodeUnauthenticated},
		{"a stranger", pause(both, "stranger-token-0123456789", "t1"), connect.CodePermissionDenied},
		{"an unknown task", pause(both, "stranger-token-0123456789", "t2"), connect.CodeNotFound},
		{"the task's agent, by JWT", pause(both, idp.Sign(t, idp.Claims("agent:jwt")), "t1"), connect.CodeUnimplemented},
		{"JWTs only: no token", pause(jwtOnly, "", "t1"), connect.CodeUnauthenticated},
		{"JWTs only: the task's agent", pause(jwtOnly, idp.Sign(t, idp.Claims("agent:jwt")), "t1"), connect.CodeUnimplemented},
	} {
		if got := connect.CodeOf(c.err); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	const procedure = "/steward.v1.TaskService/PauseTask"
	if got := testutil.ToFloat64(denied.WithLabelValues(procedure, "unauthenticated")); got != 3 {
		t.Errorf("unauthenticated counted %v, want 3", got)
	}
	if got := testutil.ToFloat64(denied.WithLabelValues(procedure, "permission_denied")); got != 1 {
		t.Errorf("permission_denied counted %v, want 1", got)
	}
	lines := strings.Count(logs.String(), `msg="call denied"`)
	if lines != 4 {
		t.Errorf("%d denials logged, want 4:\n%s", lines, logs.String())
	}
	for _, want := range []string{
		`procedure=TaskService/PauseTask code=permission_denied reason="user:eve may not call TaskService/PauseTask on task t1`,
		`principal=user:eve`,
		`reason="bearer JWT refused: the JWT has expired (exp)"`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %s:\n%s", want, logs.String())
		}
	}
}

// syncBuffer is a bytes.Buffer that handlers of concurrent calls may
// write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
