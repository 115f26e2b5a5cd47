package e2e_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steward-run/steward/cmd/steward/app"
)

// startLogs starts a dev server with args on data directory data, stops
// it, and returns what it logged at warn level and above.
func startLogs(t *testing.T, data string, args ...string) string {
	t.Helper()
	var logs strings.Builder
	m := app.NewServer(io.Discard, &logs)
	if err := m.ParseFlags("dev", append([]string{"--addr", "127.0.0.1:0", "--data", data, "--log-level", "warn"}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Close()
	return logs.String()
}

// TestKeyFilesOthersMayReadAreWarnedOf: every file of a secret a dev
// server reads — its secret parameters' key, its credential (and permit)
// signing key, its NATS users' seeds — is warned of at start when other
// users of the machine may read it, as its token file is; the files it
// creates itself are not.
func TestKeyFilesOthersMayReadAreWarnedOf(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if logs := startLogs(t, data); strings.Contains(logs, "readable by other users") {
		t.Fatalf("a first start, with the files it made: %s", logs)
	}
	exposed := []string{app.SecretKeyFile, app.CredentialKeyFile, filepath.Join("nats", "admin.nk"), app.TokensFileName}
	for _, name := range exposed {
		if err := os.Chmod(filepath.Join(data, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logs := startLogs(t, data)
	for _, name := range exposed {
		if !strings.Contains(logs, filepath.Join(data, name)+" is readable by other users") {
			t.Errorf("%s, mode 0644, is not warned of:\n%s", name, logs)
		}
	}
}

// TestNATSOffLoopbackIsWarnedOf: the embedded NATS speaks no TLS, so
// serving it beyond loopback puts every event on the network in clear;
// each start says so.
func TestNATSOffLoopbackIsWarnedOf(t *testing.T) {
	for listen, warned := range map[string]bool{"127.0.0.1:0": false, "0.0.0.0:0": true} {
		logs := startLogs(t, filepath.Join(t.TempDir(), "data"), "--nats-listen", listen)
		if got := strings.Contains(logs, "cleartext"); got != warned {
			t.Errorf("--nats-listen %s: warned %v, want %v:\n%s", listen, got, warned, logs)
		}
	}
}
