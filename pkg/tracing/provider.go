package tracing

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Config says where spans go. The zero value traces nothing.
type Config struct {
	// Endpoint is the OTLP/HTTP collector's URL, such as
	// http://otel-collector:4318 (spans go to its /v1/traces unless the
	// URL names a path); empty turns tracing off.
	Endpoint string
	// Service names this process in its spans: steward, or
	// steward-<plane> in services mode.
	Service string
	// Version is the build's version, recorded with the service name.
	Version string
}

// Provider is a tracer provider and how to flush it.
type Provider struct {
	trace.TracerProvider
	// Shutdown flushes the spans not yet exported and stops the exporter.
	Shutdown func(context.Context) error
}

// NewProvider returns the tracer provider cfg asks for: spans batched to an
// OTLP/HTTP endpoint, or, with no endpoint, the no-op provider, which
// records nothing and costs next to nothing.
func NewProvider(ctx context.Context, cfg Config) (*Provider, error) {
	if cfg.Endpoint == "" {
		return &Provider{TracerProvider: Off(), Shutdown: func(context.Context) error { return nil }}, nil
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("trace endpoint %q: want an http or https URL, such as http://otel-collector:4318", cfg.Endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces" // OTLP/HTTP's path, as for OTEL_EXPORTER_OTLP_ENDPOINT
	}
	exp, err := NewExporter(u.String(), os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("trace exporter for %s: %w", cfg.Endpoint, err)
	}
	return WithExporter(exp, cfg), nil
}

// WithExporter returns a provider that batches every span to exp: the
// OTLP exporter (Exporter), or a test's in-memory one.
func WithExporter(exp sdktrace.SpanExporter, cfg Config) *Provider {
	res := resource.NewSchemaless(semconv.ServiceName(cfg.Service), semconv.ServiceVersion(cfg.Version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{TracerProvider: tp, Shutdown: func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
		defer cancel()
		return tp.Shutdown(ctx)
	}}
}

// ShutdownTimeout bounds how long Shutdown flushes: a collector that is
// down or hangs costs a stopping process this, not DefaultExportTimeout
// for each batch still queued; the spans not sent by then are dropped.
const ShutdownTimeout = 5 * time.Second
