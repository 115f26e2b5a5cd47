package tracing_test

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/tracing"
)

// receiver is an OTLP/HTTP collector in the test: it decodes each POST as
// the collector's own ExportTraceServiceRequest, as a real one would.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []*coltracepb.ExportTraceServiceRequest
	headers []http.Header
}

func startReceiver(t *testing.T, status int) *receiver {
	r := newReceiver(status)
	r.Start()
	t.Cleanup(r.Close)
	return r
}

func newReceiver(status int) *receiver {
	r := &receiver{}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		msg := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(raw, msg)
		}
		if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want an OTLP protobuf export on /v1/traces", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.reqs, r.headers = append(r.reqs, msg), append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		if status != http.StatusOK {
			http.Error(w, "collector says no", status)
		}
	}))
	return r
}

func (r *receiver) received() ([]*coltracepb.ExportTraceServiceRequest, []http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs, r.headers
}

// TestExporterSendsWhatTheSpansSaid: spans ended under a provider from
// NewProvider reach a collector, on Shutdown, as one OTLP request whose
// resource, scopes, kinds, parent, status, events, links and attributes of
// every kind are what was recorded, with the headers and gzip the OTLP
// environment variables ask for.
func TestExporterSendsWhatTheSpansSaid(t *testing.T) {
	rcv := startReceiver(t, http.StatusOK)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret, x-team = ops")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
	tp, err := tracing.NewProvider(context.Background(), tracing.Config{Endpoint: rcv.URL, Service: "steward-test", Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	ctx, root := tp.Tracer("steward", trace.WithInstrumentationVersion("v1"), trace.WithInstrumentationAttributes(attribute.Bool("scoped", true))).
		Start(context.Background(), "root", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(at))
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	_, child := tp.Tracer("other").Start(ctx, "child", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(at),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("why", "cause")}}))
	child.SetAttributes(
		attribute.Bool("b", true), attribute.Int64("i", -7), attribute.Float64("f", 1.5), attribute.String("s", "x"),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{1, 2}),
		attribute.Float64Slice("fs", []float64{0.5}), attribute.StringSlice("ss", []string{"a", "b"}),
		attribute.ByteSlice("by", []byte{0, 1}),
		attribute.Slice("sl", attribute.StringValue("m"), attribute.IntValue(3)),
		attribute.Map("mp", attribute.String("k", "v")),
	)
	child.AddEvent("retry", trace.WithTimestamp(at.Add(time.Second)), trace.WithAttributes(attribute.Int("attempt", 2)))
	child.SetStatus(codes.Error, "tool failed")
	child.End(trace.WithTimestamp(at.Add(2 * time.Second)))
	root.SetStatus(codes.Ok, "")
	root.End(trace.WithTimestamp(at.Add(3 * time.Second)))
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	reqs, headers := rcv.received()
	if len(reqs) != 1 {
		t.Fatalf("the collector got %d requests; want 1", len(reqs))
	}
	if h := headers[0]; h.Get("Authorization") != "Bearer s3cret" || h.Get("X-Team") != "ops" || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("headers %v; want the OTEL_EXPORTER_OTLP_HEADERS ones, gzip", h)
	}
	rsc, csc := root.SpanContext(), child.SpanContext()
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	i64 := func(n int64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
	}
	boo := func(b bool) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
	}
	dbl := func(f float64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
	}
	arr := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	id := func(b [16]byte) []byte { return b[:] }
	sid := func(b [8]byte) []byte { return b[:] }
	const local, remoteFlags = 0x101, 0x301 // sampled, knows whether the parent is remote (and is)
	want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", str("steward-test")), kv("service.version", str("v9"))}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "other"},
			Spans: []*tracepb.Span{{
				TraceId: id(csc.TraceID()), SpanId: sid(csc.SpanID()), ParentSpanId: sid(rsc.SpanID()), Flags: local,
				Name: "child", Kind: tracepb.Span_SPAN_KIND_CONSUMER,
				StartTimeUnixNano: uint64(at.UnixNano()), EndTimeUnixNano: uint64(at.Add(2 * time.Second).UnixNano()),
				Attributes: []*commonpb.KeyValue{
					kv("b", boo(true)), kv("i", i64(-7)), kv("f", dbl(1.5)), kv("s", str("x")),
					kv("bs", arr(boo(true), boo(false))), kv("is", arr(i64(1), i64(2))), kv("fs", arr(dbl(0.5))), kv("ss", arr(str("a"), str("b"))),
					kv("by", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1}}}),
					kv("sl", arr(str("m"), i64(3))),
					kv("mp", &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{kv("k", str("v"))}}}}),
				},
				Events: []*tracepb.Span_Event{{Name: "retry", TimeUnixNano: uint64(at.Add(time.Second).UnixNano()), Attributes: []*commonpb.KeyValue{kv("attempt", i64(2))}}},
				Links:  []*tracepb.Span_Link{{TraceId: id(remote.TraceID()), SpanId: sid(remote.SpanID()), Flags: remoteFlags, Attributes: []*commonpb.KeyValue{kv("why", str("cause"))}}},
				Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "tool failed"},
			}},
		}, {
			Scope: &commonpb.InstrumentationScope{Name: "steward", Version: "v1", Attributes: []*commonpb.KeyValue{kv("scoped", boo(true))}},
			Spans: []*tracepb.Span{{
				TraceId: id(rsc.TraceID()), SpanId: sid(rsc.SpanID()), Flags: local, Name: "root", Kind: tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: uint64(at.UnixNano()), EndTimeUnixNano: uint64(at.Add(3 * time.Second).UnixNano()),
				Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK},
			}},
		}},
	}}}
	if !proto.Equal(want, reqs[0]) {
		t.Errorf("the collector got\n%s\nwant\n%s", prototext.Format(reqs[0]), prototext.Format(want))
	}
}

// TestExportErrorsAreReturned: a collector that refuses a batch makes
// ExportSpans fail with its status and what it said (the SDK logs it);
// OTLP settings that cannot be honoured are refused, not ignored.
func TestExportErrorsAreReturned(t *testing.T) {
	rcv := startReceiver(t, http.StatusServiceUnavailable)
	exp, err := tracing.NewExporter(rcv.URL+"/v1/traces", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetestSpans(t)
	err = exp.ExportSpans(context.Background(), spans)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "collector says no") {
		t.Errorf("export to a refusing collector: %v; want its 503 and message", err)
	}
	if got, _ := rcv.received(); len(got) != 1 || len(got[0].ResourceSpans) != 1 {
		t.Errorf("the collector got %d requests; want the one refused", len(got))
	}
	if err := exp.Shutdown(context.Background()); err != nil || exp.ExportSpans(context.Background(), spans) != nil {
		t.Errorf("after Shutdown: %v; want exports to be no-ops", err)
	}
	if got, _ := rcv.received(); len(got) != 1 {
		t.Errorf("an export after Shutdown reached the collector")
	}
	for name, bad := range map[string]string{
		"OTEL_EXPORTER_OTLP_TIMEOUT":            "soon",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd",
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        "/nonexistent/ca.pem",
	} {
		getenv := func(k string) string { return map[string]string{name: bad}[k] }
		if _, err := tracing.NewExporter(rcv.URL, getenv); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_") {
			t.Errorf("%s=%s: %v; want it refused, naming the variable", name, bad, err)
		}
	}
	dead := startReceiver(t, http.StatusOK)
	dead.Close()
	exp2, _ := tracing.NewExporter(dead.URL+"/v1/traces", func(string) string { return "" })
	if err := exp2.ExportSpans(context.Background(), spans); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("export to a closed collector: %v; want the connection error", err)
	}
}

// tracetestSpans is one ended span to export.
func tracetestSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{3}, SpanID: trace.SpanID{4}, TraceFlags: trace.FlagsSampled})
	return tracetest.SpanStubs{{Name: "x", SpanContext: sc, StartTime: time.Unix(1, 0), EndTime: time.Unix(2, 0)}}.Snapshots()
}

// TestExporterTrustsTheCertificateNamed: an https collector whose
// certificate is signed by a CA in OTEL_EXPORTER_OTLP_CERTIFICATE is
// trusted; without it, the export fails on the unknown authority.
func TestExporterTrustsTheCertificateNamed(t *testing.T) {
	rcv := newReceiver(http.StatusOK)
	rcv.StartTLS()
	t.Cleanup(rcv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env     map[string]string
		trusted bool
	}{{map[string]string{}, false}, {map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": ca}, true}} {
		exp, err := tracing.NewExporter(rcv.URL+"/v1/traces", func(k string) string { return tc.env[k] })
		if err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportSpans(context.Background(), tracetestSpans(t)); (err == nil) != tc.trusted {
			t.Errorf("with %v: export %v; want trusted %v", tc.env, err, tc.trusted)
		}
	}
	if got, _ := rcv.received(); len(got) != 1 {
		t.Errorf("the collector got %d exports; want the one with the CA", len(got))
	}
}
