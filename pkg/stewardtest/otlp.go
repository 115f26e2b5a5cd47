package stewardtest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Collector is an in-process OTLP/HTTP trace receiver: point a Steward's
// --trace-endpoint at its URL and read the spans it was sent.
type Collector struct {
	*httptest.Server

	mu    sync.Mutex
	spans []Span
}

// Span is one span a Collector received, its ids in hex as W3C writes them.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	// Service is the resource's service.name: the process that sent it.
	Service string
	Attrs   map[string]string // string and integer attributes, as text
	Links   []string          // trace ids of its links
}

// StartCollector starts a Collector that stops when the test ends.
func StartCollector(tb testing.TB) *Collector {
	c := &Collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(c.export))
	tb.Cleanup(c.Close)
	return c
}

func (c *Collector) export(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	req := &coltracepb.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(body, req)
	}
	if r.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, "want an OTLP protobuf export on /v1/traces", http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId), ParentID: hex.EncodeToString(s.ParentSpanId),
					Name: s.Name, Service: service, Attrs: map[string]string{}}
				for _, kv := range s.Attributes {
					sp.Attrs[kv.Key] = attrText(kv.GetValue().GetStringValue(), kv.GetValue().GetIntValue())
				}
				for _, l := range s.Links {
					sp.Links = append(sp.Links, hex.EncodeToString(l.TraceId))
				}
				got = append(got, sp)
			}
		}
	}
	c.mu.Lock()
	c.spans = append(c.spans, got...)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func attrText(s string, n int64) string {
	if s != "" || n == 0 {
		return s
	}
	return strconv.FormatInt(n, 10)
}

// Spans returns the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Trace returns the spans received so far of the trace traceID.
func (c *Collector) Trace(traceID string) []Span {
	var out []Span
	for _, s := range c.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}
