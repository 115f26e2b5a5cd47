package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/proto"
)

// Exporter sends spans to an OTLP/HTTP collector as protobuf: one POST per
// batch, no retries (a batch the collector refuses or does not answer in
// time is dropped, and the error returned is logged by the SDK).
//
// It is ours rather than otlptracehttp because that exporter links gRPC,
// grpc-gateway and the collector's service stubs into the binary, and
// every linked package costs resident memory (its code and tables are
// paged in) in every Steward, tracing on or off. Safe for concurrent use.
type Exporter struct {
	url     string
	headers http.Header
	gzip    bool
	timeout time.Duration
	client  *http.Client
	stopped atomic.Bool
}

// DefaultExportTimeout bounds one export, as OTEL_EXPORTER_OTLP_TIMEOUT's
// default does.
const DefaultExportTimeout = 10 * time.Second

// maxErrorBody is how much of a refusal's body an error quotes.
const maxErrorBody = 512

// NewExporter returns an exporter posting to url (the full URL, with its
// /v1/traces path), configured by the OTLP exporter's environment
// variables it honours (docs/tracing.md): OTEL_EXPORTER_OTLP_[TRACES_]HEADERS,
// _TIMEOUT, _COMPRESSION and _CERTIFICATE, the TRACES_ form winning.
func NewExporter(url string, getenv func(string) string) (*Exporter, error) {
	env := func(name string) string {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	e := &Exporter{url: url, headers: http.Header{}, timeout: DefaultExportTimeout}
	for pair := range strings.SplitSeq(env("HEADERS"), ",") {
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			continue // OTel's own exporter skips a malformed entry too
		}
		e.headers.Set(unescape(k), unescape(v))
	}
	if v := env("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT %q: want milliseconds, more than 0", v)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	switch c := env("COMPRESSION"); c {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION %q: want gzip or none", c)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if path := env("CERTIFICATE"); path != "" {
		pem, err := os.ReadFile(path)
		roots := x509.NewCertPool()
		if err != nil || !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE %q: want a readable PEM file of CA certificates (%v)", path, err)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	e.client = &http.Client{Transport: tr}
	return e, nil
}

// unescape decodes a header's key or value, which OTel writes URL-encoded.
func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// ExportSpans posts spans as one OTLP ExportTraceServiceRequest and
// returns an error unless the collector answers 2xx within the timeout.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() || len(spans) == 0 {
		return nil
	}
	body, err := proto.Marshal(otlpData(spans))
	if err != nil {
		return fmt.Errorf("otlp: encode %d spans: %w", len(spans), err)
	}
	if e.gzip {
		if body, err = gzipped(body); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	req.Header = e.headers.Clone()
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: export %d spans: %w", len(spans), err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // so the connection is reused
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: export %d spans to %s: %s: %s", len(spans), e.url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Shutdown stops exporting; the batch processor has flushed before it
// calls this.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return ctx.Err()
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	if err = errors.Join(err, zw.Close()); err != nil {
		return nil, fmt.Errorf("otlp: gzip: %w", err)
	}
	return buf.Bytes(), nil
}
