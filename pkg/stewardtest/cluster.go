package stewardtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Cluster is a JetStream cluster of servers in the test's process (or
// each in a process of its own, ClusterProcesses), each with its own store
// and its own client connection: enough to run streams with three
// replicas. Each node listens for clients on a fixed port of 127.0.0.1, so
// that processes outside the test can connect to it and a node stopped
// with StopNode comes back with StartNode where it was. Its methods are
// safe to call concurrently.
type Cluster struct {
	// Nodes are the servers; nil for nodes in processes of their own.
	// StartNode replaces a restarted node's: read it with Node.
	Nodes []*server.Server
	// Buses are the nodes' connections, in the order of Nodes: a client
	// of Buses[i] reaches the cluster through node i. Their Server is nil.
	// StartNode replaces a restarted node's: read it with Bus.
	Buses []*Bus

	tb      testing.TB
	cfg     clusterConfig
	routes  []*url.URL
	clients []string // each node's client address, HOST:PORT
	stores  []string // each node's store directory
	mu      sync.Mutex
	// procs are the nodes' processes (ClusterProcesses); Nodes are nil then.
	procs []*nodeProcess
	// solicit are the routes each node solicits, and advertise the
	// address it advertises to its peers ("" for its own): see routesOf.
	solicit   [][]string
	advertise []string
}

// ClusterOption changes how StartCluster configures its nodes.
type ClusterOption func(*clusterConfig)

type clusterConfig struct {
	configFile string
	user, pass string
	processes  bool
	lagging    int // the node that hears its peers late, or -1
	lag        time.Duration
}

// Lagging makes node (0-based) hear every other node delay late: its
// routes go through a proxy that holds back what its peers send. Its
// replicas then apply what the others agreed delay after them, and a
// direct get it answers can miss an append the leader has acknowledged —
// a follower behind, made on purpose.
func Lagging(node int, delay time.Duration) ClusterOption {
	return func(c *clusterConfig) { c.lagging, c.lag = node, delay }
}

// ClusterProcesses runs each node as a process of its own instead of in
// the test's: the test binary again, which RunNodeFromEnv, called first in
// its TestMain, turns into the node. StopNode then kills the node with
// SIGKILL — no leader steps down, nothing is flushed — as a crash of its
// machine would, and Nodes holds nil; the test's connections (Buses) go
// over TCP.
func ClusterProcesses() ClusterOption {
	return func(c *clusterConfig) { c.processes = true }
}

// ClusterConfigFile makes every node start from the nats-server
// configuration file at path — the users.conf `steward nats-users`
// writes, say — before the cluster's own settings are applied.
func ClusterConfigFile(path string) ClusterOption {
	return func(c *clusterConfig) { c.configFile = path }
}

// ClusterAdmin adds a user with every permission to each node, for the
// test's own connections (Buses): a node configured with users
// (ClusterConfigFile) takes no one else.
func ClusterAdmin(user, password string) ClusterOption {
	return func(c *clusterConfig) { c.user, c.pass = user, password }
}

// StartCluster runs a JetStream cluster of size servers, routed to each
// other on free ports of 127.0.0.1, and waits until it has a meta leader
// that counts every server as a JetStream peer, so that a stream with size
// replicas can be placed. The test's clients connect in-process. The
// servers stop when the test ends.
func StartCluster(tb testing.TB, size int, opts ...ClusterOption) *Cluster {
	tb.Helper()
	c := &Cluster{tb: tb, Nodes: make([]*server.Server, size), Buses: make([]*Bus, size), procs: make([]*nodeProcess, size)}
	c.cfg.lagging = -1
	for _, o := range opts {
		o(&c.cfg)
	}
	// JetStream wants every server's routes configured, so the ports are
	// chosen before any server starts.
	for range size {
		c.routes = append(c.routes, &url.URL{Scheme: "nats-route", Host: FreeAddr(tb)})
		c.clients = append(c.clients, FreeAddr(tb))
		c.stores = append(c.stores, tb.TempDir())
	}
	for i := range size {
		solicit, advertise := c.routesOf(i)
		c.solicit, c.advertise = append(c.solicit, solicit), append(c.advertise, advertise)
	}
	for i := range size {
		c.start(i)
	}
	for i := range size {
		c.ready(i)
	}
	c.waitPeers()
	for i := range size {
		c.connect(i)
	}
	return c
}

// ready waits until node i takes clients.
func (c *Cluster) ready(i int) {
	c.tb.Helper()
	if c.cfg.processes {
		c.mu.Lock()
		p := c.procs[i]
		c.mu.Unlock()
		p.ready(c.tb, time.Minute) // longer than the node waits for itself
		return
	}
	if !c.Node(i).ReadyForConnections(10 * time.Second) {
		c.tb.Fatalf("node %d is not ready for connections", i+1)
	}
}

// waitPeers waits until the cluster has a meta leader that counts every
// node as a JetStream peer, so that a stream with a replica on each node
// can be placed. A node process waits for that itself before it says it
// is ready (RunNode).
func (c *Cluster) waitPeers() {
	c.tb.Helper()
	if c.cfg.processes {
		return
	}
	Eventually(c.tb, 30*time.Second, func() (bool, string) {
		for j := range c.Nodes {
			n := c.Node(j)
			if n.Running() && n.JetStreamIsLeader() {
				peers := n.JetStreamClusterPeers()
				return len(peers) == len(c.Nodes), fmt.Sprintf("meta leader %s sees JetStream peers %v", n.Name(), peers)
			}
		}
		return false, "no JetStream meta leader"
	})
}

// options builds node i's configuration, the same at every start.
func (c *Cluster) options(i int) *server.Options {
	c.tb.Helper()
	o, err := c.NodeConfig(i).Options()
	if err != nil {
		c.tb.Fatal(err)
	}
	return o
}

// NodeConfig returns node i's configuration: what a process running the
// node (RunNode) is given.
func (c *Cluster) NodeConfig(i int) NodeConfig {
	return NodeConfig{
		Name: c.Name(i), Client: c.clients[i], Cluster: c.routes[i].Host, Routes: c.solicit[i], Advertise: c.advertise[i],
		StoreDir: c.stores[i], ConfigFile: c.cfg.configFile, AdminUser: c.cfg.user, AdminPassword: c.cfg.pass,
	}
}

// routesOf returns the routes node i solicits, and the address it
// advertises to its peers ("" for its own). Every node solicits every
// other, but for a lagging cluster: the lagging node alone solicits its
// peers, each through a proxy that delays what the peer sends, and
// advertises an address no one listens on, so that no peer opens a
// route to it that would bypass the proxies. The proxies run in the
// test's process, and serve a restarted node as they did the first.
func (c *Cluster) routesOf(i int) (solicit []string, advertise string) {
	for j, r := range c.routes {
		switch {
		case c.cfg.lagging < 0:
			solicit = append(solicit, r.String())
		case j == c.cfg.lagging:
		case i == c.cfg.lagging:
			solicit = append(solicit, (&url.URL{Scheme: r.Scheme, Host: startLagProxy(c.tb, r.Host, c.cfg.lag).addr()}).String())
		default:
			solicit = append(solicit, r.String())
		}
	}
	if i == c.cfg.lagging {
		advertise = "127.0.0.1:1"
	}
	return solicit, advertise
}

// NodeConfig is one node of a test cluster: its name, where it listens,
// its routes to the others, where it keeps its store and whom it takes.
// It travels as JSON to a node run in a process of its own (RunNode).
type NodeConfig struct {
	Name          string
	Client        string   // HOST:PORT for clients
	Cluster       string   // HOST:PORT for routes; "" for a single server, not clustered
	Routes        []string // the route URLs it solicits, nats-route://HOST:PORT
	Advertise     string   `json:",omitempty"` // the route address it advertises, when not its own
	StoreDir      string
	ConfigFile    string `json:",omitempty"` // ClusterConfigFile
	AdminUser     string `json:",omitempty"` // ClusterAdmin
	AdminPassword string `json:",omitempty"`
}

// Options returns the server options of the node n describes.
func (n NodeConfig) Options() (*server.Options, error) {
	o := &server.Options{}
	if n.ConfigFile != "" {
		var err error
		if o, err = server.ProcessConfigFile(n.ConfigFile); err != nil {
			return nil, err
		}
	}
	if n.AdminUser != "" {
		o.Users = append(o.Users, &server.User{Username: n.AdminUser, Password: n.AdminPassword})
	}
	host, port, err := net.SplitHostPort(n.Client)
	if err != nil {
		return nil, err
	}
	if o.Port, err = strconv.Atoi(port); err != nil {
		return nil, err
	}
	o.ServerName = n.Name
	o.Host = host // routing waits for a client listener
	o.JetStream, o.StoreDir = true, n.StoreDir
	o.NoSigs, o.NoLog = true, true
	if n.Cluster == "" {
		return o, nil
	}
	clusterHost, port, err := net.SplitHostPort(n.Cluster)
	if err != nil {
		return nil, err
	}
	clusterPort, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	o.Cluster = server.ClusterOpts{Name: "steward-test", Host: clusterHost, Port: clusterPort, Advertise: n.Advertise}
	for _, r := range n.Routes {
		u, err := url.Parse(r)
		if err != nil {
			return nil, err
		}
		o.Routes = append(o.Routes, u)
	}
	return o, nil
}

// start runs node i and stops it when the test ends.
func (c *Cluster) start(i int) {
	c.tb.Helper()
	if c.cfg.processes {
		p := startNodeProcess(c.tb, c.NodeConfig(i))
		c.mu.Lock()
		c.procs[i] = p
		c.mu.Unlock()
		return
	}
	ns, err := server.NewServer(c.options(i))
	if err != nil {
		c.tb.Fatal(err)
	}
	ns.Start()
	c.tb.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	c.mu.Lock()
	c.Nodes[i] = ns
	c.mu.Unlock()
}

// connect opens the test's in-process connection to node i.
func (c *Cluster) connect(i int) {
	c.tb.Helper()
	ns := c.Node(i)
	bus := connectBus(c.tb, func(opts ...nats.Option) (*nats.Conn, error) {
		o := []nats.Option{nats.Name("steward-test")}
		if c.cfg.user != "" {
			o = append(o, nats.UserInfo(c.cfg.user, c.cfg.pass))
		}
		if ns == nil {
			// A node of its own: over TCP, to this node alone.
			return nats.Connect(c.ClientURL(i), append(o, nats.DontRandomize(), nats.IgnoreDiscoveredServers())...)
		}
		return nats.Connect("", append(append(o, nats.InProcessServer(ns)), opts...)...)
	})
	c.mu.Lock()
	c.Buses[i] = bus
	c.mu.Unlock()
}

// Name returns node i's server name.
func (c *Cluster) Name(i int) string { return fmt.Sprintf("steward-%d", i+1) }

// Node returns node i as it runs now (StartNode replaces it); nil for a
// node in a process of its own (ClusterProcesses).
func (c *Cluster) Node(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Nodes[i]
}

// Running reports whether node i runs: it was not stopped, or was started
// again.
func (c *Cluster) Running(i int) bool {
	if c.cfg.processes {
		c.mu.Lock()
		p := c.procs[i]
		c.mu.Unlock()
		select {
		case <-p.done:
			return false
		default:
			return true
		}
	}
	return c.Node(i).Running()
}

// Bus returns the test's connection to node i as it is now.
func (c *Cluster) Bus(i int) *Bus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Buses[i]
}

// ClientURL returns where node i takes clients, nats://HOST:PORT; it is
// the same after a restart.
func (c *Cluster) ClientURL(i int) string { return "nats://" + c.clients[i] }

// StopNode ends node i; its store stays for StartNode. A node in the
// test's process shuts down, handing on what it leads first; a node in a
// process of its own (ClusterProcesses) is killed, as a crash would end
// it. Its clients lose the connection; those of other processes reconnect
// to the nodes the cluster told them of.
func (c *Cluster) StopNode(i int) {
	c.tb.Helper()
	if c.cfg.processes {
		c.mu.Lock()
		p := c.procs[i]
		c.mu.Unlock()
		p.kill()
		return
	}
	ns := c.Node(i)
	ns.Shutdown()
	ns.WaitForShutdown()
}

// StartNode starts node i again after StopNode, under the same name, with
// the same store and ports, reconnects the test's connection to it, and
// waits until it takes clients and the meta leader counts it as a
// JetStream peer again.
func (c *Cluster) StartNode(i int) {
	c.tb.Helper()
	c.Bus(i).Conn.Close()
	c.start(i)
	c.ready(i)
	c.connect(i)
	c.waitPeers()
}

// FreeAddr returns an address on 127.0.0.1 that nothing listened on a
// moment ago, for a server the test starts elsewhere (a process, a flag).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	// Below Linux's ephemeral range (32768–60999): a port the kernel
	// picked for :0 and freed here is the next one it hands an outgoing
	// connection of any process, which took a node's route port between
	// this choice and the node's bind (a cluster start failed so in CI).
	for range 100 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		defer l.Close()
		return l.Addr().String()
	}
	tb.Fatal("no free port on 127.0.0.1 between 20000 and 32000 in 100 tries")
	return ""
}
