package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// The arms whose planes and NATS nodes run as processes of their own, so
// that each one's CPU time can be read apart: this binary again, as a
// NATS node (stewardtest.RunNodeFromEnv, NodeEnv set) or as the steward
// command (first argument "steward").

// stewardArg, as this binary's first argument, makes it the steward
// command with the arguments after it.
const stewardArg = "steward"

// servingLine is what `steward serve` prints once it listens.
var servingLine = regexp.MustCompile(`serving Connect, gRPC and gRPC-Web on (https?://\S+)`)

// component is a NATS node or a plane in a process of its own.
type component struct {
	name  string
	cmd   *exec.Cmd
	log   *os.File
	stdin io.Closer // held open: a node runs until its stdin closes
}

// startComponent runs this binary with args and env as the component
// name, its stderr in dir/name.log, and waits until a line of its stdout
// matches ready, returning the line's first submatch.
func startComponent(dir, name string, ready *regexp.Regexp, env []string, args ...string) (*component, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = log
	// Killed with the arm's process, should it die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	c := &component{name: name, cmd: cmd, log: log, stdin: stdin}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- append(m, "")[1]:
				default:
				}
			}
		}
		close(found)
	}()
	select {
	case v, ok := <-found:
		if ok {
			return c, v, nil
		}
		c.stop()
		return nil, "", fmt.Errorf("%s exited before it was ready; its log: %s", name, log.Name())
	case <-time.After(time.Minute):
		c.stop()
		return nil, "", fmt.Errorf("%s not ready within a minute; its log: %s", name, log.Name())
	}
}

// stop ends the component with SIGTERM, and SIGKILL if it is not gone
// within 10 s.
func (c *component) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.stdin.Close()
	c.log.Close()
}

// cpu is the component's CPU time so far, user and system.
func (c *component) cpu() time.Duration { return treeCPU(c.cmd.Process.Pid) }

// freeAddr is an address on 127.0.0.1 that nothing listened on a moment
// ago: a node's ports must be known before any node starts.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startNodes runs size NATS nodes, each a process with its own store
// under dir: one is a single server, not clustered (as arm (d)'s
// embedded one); more are a JetStream cluster routed on loopback. It
// returns them and their client URLs once each says it is ready (for a
// cluster: it has joined the meta group).
func startNodes(dir string, size int) ([]*component, []string, error) {
	var cfgs []stewardtest.NodeConfig
	var routes []string
	for i := range size {
		client, err := freeAddr()
		if err != nil {
			return nil, nil, err
		}
		cfg := stewardtest.NodeConfig{Name: fmt.Sprint("nats-", i+1), Client: client, StoreDir: filepath.Join(dir, fmt.Sprint("nats-", i+1))}
		if size > 1 {
			if cfg.Cluster, err = freeAddr(); err != nil {
				return nil, nil, err
			}
			routes = append(routes, "nats-route://"+cfg.Cluster)
		}
		cfgs = append(cfgs, cfg)
	}
	ready := regexp.MustCompile("^" + regexp.QuoteMeta(stewardtest.NodeReady) + "$")
	started := make(chan nodeStart, size)
	for i := range cfgs {
		cfgs[i].Routes = routes
		spec, err := json.Marshal(cfgs[i])
		if err != nil {
			return nil, nil, err
		}
		// All at once: a clustered node is ready only once its peers are up.
		go func() {
			c, _, err := startComponent(dir, cfgs[i].Name, ready, []string{stewardtest.NodeEnv + "=" + string(spec)})
			started <- nodeStart{i, c, err}
		}()
	}
	nodes, urls := make([]*component, size), make([]string, size)
	var firstErr error
	for range size {
		s := <-started
		if s.err != nil && firstErr == nil {
			firstErr = s.err
		}
		nodes[s.i], urls[s.i] = s.c, "nats://"+cfgs[s.i].Client
	}
	if firstErr != nil {
		stopAll(nodes)
		return nil, nil, firstErr
	}
	return nodes, urls, nil
}

type nodeStart struct {
	i   int
	c   *component
	err error
}

// stopAll stops every component that started, last first.
func stopAll(cs []*component) {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i] != nil {
			cs[i].stop()
		}
	}
}

// runPlaneProcesses is arms (f) and (g): arm (d)'s four planes, each a
// `steward serve` process, on nodes NATS nodes (each its own process)
// with streams of as many replicas; driven as (d). Each process's CPU time
// is reported apart.
func runPlaneProcesses(o opts, nodes int) (Result, error) {
	d, err := startDeployment("bench-procs-", nodes, nil)
	if err != nil {
		return Result{}, err
	}
	defer d.stop()
	r, err := driveSteward(o, d.planeURL["control"], d.planeURL["state"], "", twoCalls, d.cpus)
	if err == nil {
		r.EventsLeader, err = streamLeader(d.natsURLs[0], eventlog.DefaultStream)
	}
	return r, err
}

// runThroughGateway is arm (h): arm (g) with the calls going through a
// `steward gateway` process, as clients reach a deployment by its one
// address; the gateway's CPU is reported beside the planes'.
func runThroughGateway(o opts) (Result, error) {
	d, err := startDeployment("bench-gateway-", 1, nil)
	if err != nil {
		return Result{}, err
	}
	defer d.stop()
	args := []string{stewardArg, "gateway", "--addr", "127.0.0.1:0", "--log-level", "error"}
	for plane, url := range d.planeURL {
		args = append(args, "--"+plane, url)
	}
	c, url, err := startComponent(d.dir, "gateway", gatewayLine, nil, args...)
	if err != nil {
		return Result{}, err
	}
	d.all = append(d.all, c)
	return driveSteward(o, url, url, "", twoCalls, d.cpus)
}

// gatewayLine is what `steward gateway` prints once it listens.
var gatewayLine = regexp.MustCompile(`gateway serving Connect, gRPC and gRPC-Web on (https?://\S+)`)

// deployment is arm (d)'s four planes, each a `steward serve` process, on
// NATS nodes that are processes of their own: plane k on node k mod nodes,
// streams of as many replicas as there are nodes.
type deployment struct {
	dir      string
	all      []*component // NATS nodes, then planes
	natsURLs []string
	planeURL map[string]string // by plane name
}

// more adds arguments to a plane's command, by plane name.
func startDeployment(prefix string, nodes int, more map[string][]string) (d *deployment, err error) {
	dir, tools, policy, err := armDir(prefix, true)
	if err != nil {
		return nil, err
	}
	d = &deployment{dir: dir, planeURL: map[string]string{}}
	defer func() {
		if err != nil {
			d.stop()
		}
	}()
	if d.all, d.natsURLs, err = startNodes(dir, nodes); err != nil {
		return d, err
	}
	for k, plane := range []string{"state", "governance", "execution", "control"} {
		args := []string{stewardArg, "serve", "--plane", plane, "--nats", d.natsURLs[k%nodes], "--replicas", fmt.Sprint(nodes),
			"--addr", "127.0.0.1:0", "--log-level", "error",
			"--sandbox", filepath.Join(dir, "sandbox"), "--tools", tools, "--policy-dir", policy,
			"--credential-key", filepath.Join(dir, "credential.key"), "--insecure"}
		c, url, err := startComponent(dir, plane, servingLine, nil, append(args, more[plane]...)...)
		if err != nil {
			return d, err
		}
		d.all = append(d.all, c)
		d.planeURL[plane] = url
	}
	return d, nil
}

// cpus is each process's CPU time so far, by name.
func (d *deployment) cpus() map[string]time.Duration {
	m := map[string]time.Duration{}
	for _, c := range d.all {
		m[c.name] = c.cpu()
	}
	return m
}

func (d *deployment) stop() {
	stopAll(d.all)
	os.RemoveAll(d.dir)
}

// streamLeader names the node that leads stream: the one that orders its
// appends, and so does more than its peers.
func streamLeader(url, stream string) (string, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return "", fmt.Errorf("%s: %w", stream, err)
	}
	if c := st.CachedInfo().Cluster; c != nil && c.Leader != "" {
		return c.Leader, nil
	}
	return "nats-1", nil // a single server, not clustered
}

// runAsComponent turns this process into a NATS node or the steward
// command when it was started as one, and exits; otherwise it returns.
func runAsComponent(run func(args []string, stdout, stderr io.Writer) int) {
	stewardtest.RunNodeFromEnv()
	if len(os.Args) > 1 && os.Args[1] == stewardArg {
		os.Exit(run(os.Args[2:], os.Stdout, os.Stderr))
	}
}
