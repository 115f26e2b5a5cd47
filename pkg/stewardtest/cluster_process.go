package stewardtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NodeEnv is the environment variable that tells a test binary to run a
// cluster node, the JSON NodeConfig it holds, instead of its tests
// (RunNodeFromEnv).
const NodeEnv = "STEWARDTEST_CLUSTER_NODE"

// NodeReady is the line a node process prints once it takes clients and
// its cluster counts it as a JetStream peer: a program other than a test
// that runs nodes (the bench) waits for it.
const NodeReady = "stewardtest node ready"

// RunNodeFromEnv runs the cluster node NodeEnv describes, if it is set,
// and exits when the node's parent goes (its stdin closes); without
// NodeEnv it returns at once. A test package whose tests use
// ClusterProcesses calls it first in its TestMain.
func RunNodeFromEnv() {
	spec := os.Getenv(NodeEnv)
	if spec == "" {
		return
	}
	if err := runNode(spec); err != nil {
		fmt.Fprintln(os.Stderr, "stewardtest node:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runNode(spec string) error {
	var cfg NodeConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		return fmt.Errorf("%s: %w", NodeEnv, err)
	}
	opts, err := cfg.Options()
	if err != nil {
		return err
	}
	// The node logs on stderr, which the test shows if the node fails.
	opts.NoLog = false
	ns, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	ns.ConfigureLogger()
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		return fmt.Errorf("%s is not ready for connections", cfg.Name)
	}
	// Ready once the meta group is current here: the node has joined it,
	// and a stream may be placed on it.
	for deadline := time.Now().Add(30 * time.Second); !ns.JetStreamIsCurrent(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: JetStream's meta group is not current", cfg.Name)
		}
	}
	fmt.Println(NodeReady)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes
	ns.Shutdown()
	return nil
}

// nodeProcess is a cluster node in a process of its own.
type nodeProcess struct {
	cmd     *exec.Cmd
	stdin   io.Closer
	readyCh chan struct{}
	done    chan struct{}
	stderr  *strings.Builder
	mu      sync.Mutex
}

// startNodeProcess runs the test binary as the node cfg describes; it is
// killed when the test ends.
func startNodeProcess(tb testing.TB, cfg NodeConfig) *nodeProcess {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	spec, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), NodeEnv+"="+string(spec))
	p := &nodeProcess{cmd: cmd, readyCh: make(chan struct{}), done: make(chan struct{}), stderr: &strings.Builder{}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{mu: &p.mu, w: p.stderr}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p.stdin = stdin
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == NodeReady {
				close(p.readyCh)
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(p.kill)
	return p
}

// ready waits until the node says it is ready.
func (p *nodeProcess) ready(tb testing.TB, within time.Duration) {
	tb.Helper()
	select {
	case <-p.readyCh:
	case <-p.done:
		tb.Fatalf("node process exited before it was ready; it logged:\n%s", p.logged())
	case <-time.After(within):
		tb.Fatalf("node process not ready within %s; it logged:\n%s", within, p.logged())
	}
}

// kill sends SIGKILL and waits for the process to end.
func (p *nodeProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
	p.stdin.Close()
}

func (p *nodeProcess) logged() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
