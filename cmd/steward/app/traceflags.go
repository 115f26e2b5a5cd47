package app

import (
	"context"
	"flag"
	"os"
	"runtime/debug"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/trace"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/tracing"
)

// TraceEndpointEnv names the environment variable --trace-endpoint
// defaults to, for deployments that configure by environment.
const TraceEndpointEnv = "STEWARD_TRACE_ENDPOINT"

// TraceFlags say where the OpenTelemetry spans of governed actions go
// (docs/tracing.md). Tracing is off unless an endpoint is given.
type TraceFlags struct {
	// Endpoint is the OTLP/HTTP collector's URL.
	Endpoint string
}

func (f *TraceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.Endpoint, "trace-endpoint", os.Getenv(TraceEndpointEnv), "OTLP/HTTP `URL` of an OpenTelemetry collector (e.g. http://otel-collector:4318) to send a trace per governed action to, across the planes and the tool call; off when empty (default $"+TraceEndpointEnv+"; docs/tracing.md)")
}

// tracer returns the tracer provider of this process — the no-op one with
// no endpoint — and has Close flush it.
func (m *Server) tracer(ctx context.Context) (*tracing.Provider, error) {
	service := "steward"
	if m.Mode == "serve" {
		service += "-" + m.Plane
	}
	info, ok := debug.ReadBuildInfo()
	tp, err := tracing.NewProvider(ctx, tracing.Config{Endpoint: m.Traces.Endpoint, Service: service, Version: readBuildInfo(stamp, info, ok).Version})
	if err != nil {
		return nil, err
	}
	m.stops = append(m.stops, func() { _ = tp.Shutdown(context.WithoutCancel(ctx)) })
	return tp, nil
}

// traceCalls adds to opts the interceptor that records a span per call,
// where a governed action's trace begins (ProposeAction); none when
// tracing is off.
func (m *Server) traceCalls(opts []connect.HandlerOption) []connect.HandlerOption {
	if m.Traces.Endpoint == "" {
		return opts
	}
	return append(opts, connect.WithInterceptors(tracing.NewInterceptor(m.tracing.Tracer(eventlog.TracerName))))
}

// traceProvider is the provider the log records reactions' spans with: none
// when tracing is off, so that a reader's events are not even looked at
// (eventlog.Config.Tracing).
func (m *Server) traceProvider() trace.TracerProvider {
	if m.Traces.Endpoint == "" {
		return nil
	}
	return m.tracing
}
