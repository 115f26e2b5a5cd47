package gateway_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/gateway"
)

// BenchmarkUnaryCall is what the gateway adds to a unary call on loopback:
// the same small POST directly at a replica and through the gateway, each
// over a kept-alive HTTP/1.1 connection, as curl and Connect clients call.
func BenchmarkUnaryCall(b *testing.B) {
	r := startReplica(b, echo("a"))
	_, gw := startGateway(b, gateway.Plane{Name: "alpha", Services: []string{"x.v1.S"}, Replicas: []*url.URL{mustURL(b, r.URL)}})
	for name, base := range map[string]string{"direct": r.URL, "gateway": gw.URL} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				resp, err := http.Post(base+"/x.v1.S/M", "application/json", strings.NewReader(`{"taskId": "t-1"}`))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
