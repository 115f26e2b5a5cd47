package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// restateVersion is the Restate server the Restate arms run, from npm's
// @restatedev/restate-server (its binary comes in the optional dependency
// for the platform, @restatedev/restate-server-<os>-<arch>).
const restateVersion = "1.7.12"

// restateServer is a throwaway single-node Restate server on loopback in
// a temporary directory, with Restate's default configuration but for its
// addresses and telemetry (off).
type restateServer struct {
	cmd     *exec.Cmd
	dir     string
	exited  chan struct{}
	version string
	restateEndpoints
}

// restateEndpoints is what a Restate arm's child needs of the server: its
// ingress and admin URLs and its process id, to read its CPU time.
type restateEndpoints struct {
	ingress, admin string
	pid            int
}

// args passes the endpoints to an arm's child (flags -restate-ingress,
// -restate-admin, -restate-pid).
func (e restateEndpoints) args() []string {
	return []string{"-restate-ingress", e.ingress, "-restate-admin", e.admin, "-restate-pid", fmt.Sprint(e.pid)}
}

// restateBin is the path of the Restate server's binary, installed with
// npm into the user's cache directory if it is not there yet.
func restateBin() (string, error) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		return "", fmt.Errorf("no Restate server package for %s", runtime.GOARCH)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "steward-bench", "restate-"+restateVersion)
	rel := filepath.Join("node_modules", "@restatedev", "restate-server-"+runtime.GOOS+"-"+arch, "bin", "restate-server")
	if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
		return filepath.Join(dir, rel), nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	// Installed beside the cache directory and renamed into it, so that an
	// interrupted install leaves nothing that looks whole.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "restate-install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	pkg := "@restatedev/restate-server@" + restateVersion
	fmt.Fprintf(os.Stderr, "bench: Restate server missing; npm install %s into %s\n", pkg, dir)
	// --ignore-scripts: the only script is a dependency's usage report.
	cmd := exec.Command("npm", "install", "--prefix", tmp, "--no-audit", "--no-fund", "--ignore-scripts", pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install %s: %w", pkg, err)
	}
	if _, err := os.Stat(filepath.Join(tmp, rel)); err != nil {
		return "", fmt.Errorf("npm install %s: no binary for this platform: %w", pkg, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, rel), nil
}

// startRestate starts the server on free loopback ports (ingress, admin,
// node-to-node) and returns once its admin API and ingress are ready.
func startRestate() (*restateServer, error) {
	bin, err := restateBin()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", bin, err)
	}
	var addrs [3]string
	for i := range addrs {
		if addrs[i], err = freeAddr(); err != nil {
			return nil, err
		}
	}
	ingress, admin, fabric := addrs[0], addrs[1], addrs[2]
	dir, err := os.MkdirTemp("", "bench-restate-")
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, "--base-dir", filepath.Join(dir, "data"), "--node-name", "bench",
		"--bind-address", fabric, "--advertised-address", "http://"+fabric+"/", "--no-logo", "--log-disable-ansi-codes", "true")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"RESTATE_INGRESS__BIND_ADDRESS="+ingress,
		"RESTATE_ADMIN__BIND_ADDRESS="+admin,
		"RESTATE_LISTEN_MODE=tcp", // no Unix sockets in the base directory
		"RESTATE_DISABLE_TELEMETRY=true",
	)
	cmd.Stdout, cmd.Stderr = log, log
	// Killed with the driver, should it die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &restateServer{cmd: cmd, dir: dir, exited: make(chan struct{}),
		version:          strings.TrimSpace(string(out)),
		restateEndpoints: restateEndpoints{ingress: "http://" + ingress, admin: "http://" + admin, pid: cmd.Process.Pid}}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(time.Minute); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls the admin API's and the ingress's health endpoints until
// both answer 200, the server exits, or the timeout passes.
func (s *restateServer) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for _, url := range []string{s.admin + "/health", s.ingress + "/restate/health"} {
		for !healthy(ctx, url) {
			select {
			case <-s.exited:
				return fmt.Errorf("restate-server exited before it was ready:\n%s", s.logTail())
			case <-ctx.Done():
				return fmt.Errorf("%s not ready after %s:\n%s", url, timeout, s.logTail())
			case <-tick.C:
			}
		}
	}
	return nil
}

func healthy(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (s *restateServer) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stop asks the server to shut down (SIGTERM), kills it if it has not
// within 30 seconds, and removes its directory.
func (s *restateServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}
