package e2e_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/canary"
)

// TestCanaryRunInterrupted: Ctrl-C while a sample's tool call hangs on
// its staging target ends the command (exit 3, an error: the run did not
// finish) with its Steward torn down and its temporary directory gone.
func TestCanaryRunInterrupted(t *testing.T) {
	called := make(chan struct{}, 1)
	done := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case called <- struct{}{}:
		default:
		}
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(done) })
	dir, tmp := t.TempDir(), t.TempDir()
	def := canaryRunDef(t, dir, hang.URL+"/lookup")

	cmd := exec.Command(binary, "canary", "run", "--def", def)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-called:
	case err := <-exited:
		t.Fatalf("exited before its lookup was called: %v", err)
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the staging lookup was never called")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("Ctrl-C did not end the canary run within 30s")
	}
	if code := cmd.ProcessState.ExitCode(); code != canary.ExitError {
		t.Errorf("interrupted: exit %d, want %d", code, canary.ExitError)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind in TMPDIR after Ctrl-C: %v", left)
	}
}
