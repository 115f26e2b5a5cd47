package e2e_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestServeWithNATSUsersAndTLS deploys as docker-compose does, with the
// real binary throughout: `steward nats-users` writes the users, a NATS
// server runs with them and requires TLS with client certificates, each
// plane connects as its own user over TLS, execution checks permits with
// the key `steward audit key --wait` fetched while governance was
// starting, and a governed read runs from proposal to outcome. A plane
// that names no user is refused.
func TestServeWithNATSUsersAndTLS(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "nats-users")
	if out := run(t, 0, "nats-users", "--out", users); !strings.Contains(out, "users.conf") {
		t.Fatalf("nats-users said %q", out)
	}
	pki := newTestPKI(t, filepath.Join(dir, "pki"))
	url := startNATSFromUsers(t, filepath.Join(users, "nats", "users.conf"), pki)

	serve := func(plane string, flags ...string) string {
		t.Helper()
		args := append([]string{"serve", "--plane", plane, "--nats", url, "--log-level", "warn", "--insecure",
			"--nats-ca", pki.ca, "--nats-cert", pki.clientCert, "--nats-key", pki.clientKey}, flags...)
		if !strings.Contains(strings.Join(flags, " "), "--nats-nkey") {
			args = append(args, "--nats-nkey", filepath.Join(users, plane, "nats.nk"))
		}
		if !strings.Contains(strings.Join(flags, " "), "--addr") {
			args = append(args, "--addr", "127.0.0.1:0")
		}
		return startCommand(t, nil, args...).url
	}

	// A plane without a user gets no further than the handshake, and is
	// warned first.
	out := run(t, 1, "serve", "--plane", "state", "--nats", url, "--addr", "127.0.0.1:0", "--insecure",
		"--nats-ca", pki.ca, "--nats-cert", pki.clientCert, "--nats-key", pki.clientKey)
	if !strings.Contains(out, "names no user") || !strings.Contains(strings.ToLower(out), "authorization violation") {
		t.Fatalf("a plane naming no user: %q; want the warning, then an authorization violation", out)
	}

	// Governance's public key, fetched as compose's permit-key job does:
	// asked for before governance listens.
	govAddr := freeAddr(t)
	permitKey := filepath.Join(dir, "credential.pub")
	fetch := exec.Command(binary, "audit", "key", "--addr", govAddr, "--out", permitKey, "--wait", "30s")
	fetch.Stdout, fetch.Stderr = &testWriter{tb: t}, &testWriter{tb: t}
	if err := fetch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fetch.Process.Kill() })
	fetched := make(chan error, 1)
	go func() { fetched <- fetch.Wait() }()

	tool := stewardtest.StartTool(t)
	tools := writeFile(t, dir, "tools.json", `{"tools": [`+governedTools(tool)[0]+`]}`)
	control := serve("control")
	serve("governance", "--addr", govAddr, "--credential-key", filepath.Join(dir, "credential.key"))
	select {
	case err := <-fetched:
		if err != nil {
			t.Fatalf("audit key --wait: %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("audit key --wait did not finish once governance served")
	}
	serve("execution", "--permit-key", permitKey, "--tools", tools, "--sandbox", filepath.Join(dir, "sandbox"))
	state := serve("state")

	c := authed{clients: clients{tasks: newClients(control).tasks, query: newClients(state).query}}
	taskID := governedTask(t, c, "nats-users-1")
	read := propose(t, c, taskID, "read-1", "search", map[string]any{"q": "incidents last week"})
	_, done := waitAction(t, c.clients, taskID, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if done.Permit == nil || tool.CallsFor(read.OpKey) != 1 {
		t.Fatalf("the read ran %d times under permit %v, want once under a permit", tool.CallsFor(read.OpKey), done.Permit)
	}
}

// startNATSFromUsers runs a NATS JetStream server configured by the users
// file, requiring TLS with a client certificate signed by pki's CA, and
// returns its tls:// URL.
func startNATSFromUsers(t *testing.T, usersConf string, pki testPKI) string {
	t.Helper()
	opts, err := server.ProcessConfigFile(usersConf)
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.TLSConfig, err = server.GenTLSConfig(&server.TLSConfigOpts{CertFile: pki.serverCert, KeyFile: pki.serverKey, CaFile: pki.ca, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	opts.TLS, opts.TLSVerify = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	return strings.Replace(s.ClientURL(), "nats://", "tls://", 1)
}

// freeAddr returns a loopback address no one listens on, for a process
// that must be asked for before it starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// testPKI is a CA and the server and client certificates it signed, as
// PEM files.
type testPKI struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newTestPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "steward test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p := testPKI{ca: writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)}
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (cert, key string) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(t, dir, name+".pem", "CERTIFICATE", der), writePEM(t, dir, name+"-key.pem", "PRIVATE KEY", kder)
	}
	p.serverCert, p.serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	return writeFile(t, dir, name, string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})))
}
