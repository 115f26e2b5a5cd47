package stewardtest

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Cluster is a JetStream cluster of servers in the test's process, each
// with its own store and its own client connection: enough to run streams
// with three replicas. Each node listens for clients on a fixed port of
// 127.0.0.1, so that processes outside the test can connect to it and a
// node stopped with StopNode comes back with StartNode where it was.
type Cluster struct {
	Nodes []*server.Server
	// Buses are the nodes' connections, in the order of Nodes: a client
	// of Buses[i] reaches the cluster through Nodes[i]. Their Server is
	// nil; the node is Nodes[i]. StartNode replaces a restarted node's.
	Buses []*Bus

	tb      testing.TB
	cfg     clusterConfig
	routes  []*url.URL
	clients []string // each node's client address, HOST:PORT
	stores  []string // each node's store directory
	mu      sync.Mutex
}

// ClusterOption changes how StartCluster configures its nodes.
type ClusterOption func(*clusterConfig)

type clusterConfig struct {
	configFile string
	user, pass string
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
	c := &Cluster{tb: tb, Nodes: make([]*server.Server, size), Buses: make([]*Bus, size)}
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
		c.start(i)
	}
	for i, ns := range c.Nodes {
		if !ns.ReadyForConnections(10 * time.Second) {
			tb.Fatalf("node %d is not ready for connections", i+1)
		}
	}
	Eventually(tb, 30*time.Second, func() (bool, string) {
		for _, ns := range c.Nodes {
			if ns.JetStreamIsLeader() {
				peers := ns.JetStreamClusterPeers()
				return len(peers) == size, fmt.Sprintf("meta leader %s sees JetStream peers %v", ns.Name(), peers)
			}
		}
		return false, "no JetStream meta leader"
	})
	for i := range size {
		c.connect(i)
	}
	return c
}

// options builds node i's configuration, the same at every start.
func (c *Cluster) options(i int) *server.Options {
	c.tb.Helper()
	o := &server.Options{}
	if c.cfg.configFile != "" {
		var err error
		if o, err = server.ProcessConfigFile(c.cfg.configFile); err != nil {
			c.tb.Fatal(err)
		}
	}
	if c.cfg.user != "" {
		o.Users = append(o.Users, &server.User{Username: c.cfg.user, Password: c.cfg.pass})
	}
	host, port, _ := net.SplitHostPort(c.clients[i])
	o.Port, _ = strconv.Atoi(port)
	_, port, _ = net.SplitHostPort(c.routes[i].Host)
	clusterPort, _ := strconv.Atoi(port)
	o.ServerName = fmt.Sprintf("steward-%d", i+1)
	o.Host = host // routing waits for a client listener
	o.JetStream, o.StoreDir = true, c.stores[i]
	o.NoSigs, o.NoLog = true, true
	o.Cluster = server.ClusterOpts{Name: "steward-test", Host: "127.0.0.1", Port: clusterPort}
	o.Routes = c.routes
	return o
}

// start runs node i and stops it when the test ends.
func (c *Cluster) start(i int) {
	c.tb.Helper()
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
		o := []nats.Option{nats.InProcessServer(ns), nats.Name("steward-test")}
		if c.cfg.user != "" {
			o = append(o, nats.UserInfo(c.cfg.user, c.cfg.pass))
		}
		return nats.Connect("", append(o, opts...)...)
	})
	c.mu.Lock()
	c.Buses[i] = bus
	c.mu.Unlock()
}

// Node returns node i as it runs now (StartNode replaces it).
func (c *Cluster) Node(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Nodes[i]
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

// StopNode shuts node i down, as a crash of its machine would end it
// short of losing its disk: its store stays for StartNode. Its clients
// lose the connection; those of other processes reconnect to the nodes
// the cluster told them of.
func (c *Cluster) StopNode(i int) {
	c.tb.Helper()
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
	ns := c.Node(i)
	if !ns.ReadyForConnections(10 * time.Second) {
		c.tb.Fatalf("node %d is not ready for connections after a restart", i+1)
	}
	c.connect(i)
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

// FreeAddr returns an address on 127.0.0.1 that nothing listened on a
// moment ago, for a server the test starts elsewhere (a process, a flag).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
