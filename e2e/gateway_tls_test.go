package e2e_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/cmd/steward/app"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestGatewayTLS runs TLS on both sides of `steward gateway`: it serves
// HTTPS with --tls-cert/--tls-key and calls planes that serve HTTPS (here
// one `steward dev` with a certificate of a test CA, standing for every
// plane) trusting --plane-ca. Connect and gRPC clients that trust the CA
// call through it.
func TestGatewayTLS(t *testing.T) {
	dir := t.TempDir()
	pki := newTestPKI(t, filepath.Join(dir, "pki"))
	dev := startBinary(t, filepath.Join(dir, "data"), "--auth", writeFile(t, dir, "tokens.json", tokensFile),
		"--tls-cert", pki.serverCert, "--tls-key", pki.serverKey)
	args := []string{"gateway", "--addr", "127.0.0.1:0", "--log-level", "warn", "--health-check-every", "200ms",
		"--tls-cert", pki.serverCert, "--tls-key", pki.serverKey, "--plane-ca", pki.ca}
	for _, r := range app.PlaneRoutes() {
		args = append(args, "--"+r.Plane, dev.url)
	}
	gw := startCommand(t, nil, args...)
	if !strings.HasPrefix(gw.url, "https://") {
		t.Fatalf("the gateway says it serves %s, want https://", gw.url)
	}
	caPEM, err := os.ReadFile(pki.ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	trusting := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		resp, err := trusting.Get(gw.url + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("/readyz: %s\n%s", resp.Status, body)
	})
	for name, opts := range map[string][]connect.ClientOption{"connect": nil, "grpc": {connect.WithGRPC()}} {
		q := stewardv1connect.NewQueryServiceClient(trusting, gw.url, append(opts, connect.WithInterceptors(stewardtest.Bearer(agentToken)))...)
		if _, err := q.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{})); err != nil {
			t.Fatalf("%s over TLS through the gateway: %v", name, err)
		}
	}
}
