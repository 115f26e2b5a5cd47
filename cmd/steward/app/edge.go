package app

import (
	"context"
	"fmt"
	"path/filepath"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/taskstore"
)

// handlerOptions are what every served procedure passes through: the
// bearer tokens and JWTs that say who calls, the task parties and tenants
// that say what they may do, the denied-call counter and the answer budget.
func (m *Server) handlerOptions(ctx context.Context, tasks *taskstore.Store) ([]connect.HandlerOption, error) {
	file, err := m.tokens()
	if err != nil {
		return nil, err
	}
	m.warnReadableSecrets()
	jwt, stopKeys, err := m.JWT.verifier(ctx)
	if err != nil {
		return nil, err
	}
	m.stops = append(m.stops, stopKeys)
	m.denied = rpc.NewDeniedCounter()
	m.answers = rpc.NewResponseBudget(rpc.DefaultServerResponseBytes)
	// Every plane finds a task's tenant in the log itself, so that no
	// role reaches across tenants in services mode either.
	edge := []rpc.EdgeOption{rpc.WithDenied(m.denied), rpc.WithTenants(func(ctx context.Context, taskID string) (string, error) {
		tenant, err := tasks.Tenant(ctx, taskID)
		if err != nil {
			return m.Archive.tenant(ctx, taskID, err)
		}
		return tenant, nil
	})}
	if jwt != nil {
		edge = append(edge, rpc.WithJWT(jwt))
	}
	var tokens rpc.Tokens
	if file != nil {
		tokens = file.Tokens()
		edge = append(edge, rpc.WithTokenFile(file))
		watch, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); file.Watch(watch, rpc.DefaultTokenReload, m.logger) }()
		m.stops = append(m.stops, func() { stop(); <-done })
	}
	// The planes that serve procedures whose rule names a task's parties
	// look them up (the control plane).
	var parties rpc.PartiesFunc
	for _, p := range m.planes {
		if h, ok := p.(interface {
			Parties(context.Context, string) (access.TaskParties, error)
		}); ok {
			parties = h.Parties
		}
	}
	// Inside the edge interceptor, which translates its refusals: no
	// handler sees an id or a list past its documented limit.
	return rpc.HandlerOptions(m.logger, tokens, parties, edge...), nil
}

// announce says on stdout what this process serves, and where.
func (m *Server) announce() {
	what := "all planes"
	if m.Mode == "serve" {
		what = m.Plane + " plane"
	}
	fmt.Fprintf(m.stdout, "steward: %s serving Connect, gRPC and gRPC-Web on %s\n", what, m.rpc.URL())
	if m.bus != nil {
		dir, _ := filepath.Abs(m.DataDir)
		fmt.Fprintf(m.stdout, "steward: embedded NATS JetStream, data in %s\n", dir)
		if u := m.bus.ClientURL(); u != "" {
			fmt.Fprintf(m.stdout, "steward: embedded NATS also serving %s\n", u)
		}
	}
}
