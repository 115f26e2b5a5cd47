package stewardtest

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Cluster is a JetStream cluster of servers in the test's process, each
// with its own store and its own client connection: enough to run streams
// with three replicas.
type Cluster struct {
	Nodes []*server.Server
	// Buses are the nodes' connections, in the order of Nodes: a client
	// of Buses[i] reaches the cluster through Nodes[i]. Their Server is
	// nil; the node is Nodes[i].
	Buses []*Bus
}

// ClusterOption changes the cluster StartCluster runs.
type ClusterOption func(*clusterConfig)

type clusterConfig struct {
	lagging int // the node that hears its peers late, or -1
	lag     time.Duration
}

// Lagging makes node (0-based) hear every other node delay late: its
// routes go through a proxy that holds back what its peers send. Its
// replicas then apply what the others agreed delay after them, and a
// direct get it answers can miss an append the leader has acknowledged —
// a follower behind, made on purpose.
func Lagging(node int, delay time.Duration) ClusterOption {
	return func(c *clusterConfig) { c.lagging, c.lag = node, delay }
}

// StartCluster runs a JetStream cluster of size servers, routed to each
// other on free ports of 127.0.0.1, and waits until it has a meta leader
// that counts every server as a JetStream peer, so that a stream with size
// replicas can be placed. Clients connect in-process. The servers stop
// when the test ends.
func StartCluster(tb testing.TB, size int, opts ...ClusterOption) *Cluster {
	tb.Helper()
	cfg := clusterConfig{lagging: -1}
	for _, o := range opts {
		o(&cfg)
	}
	// JetStream wants every server's routes configured, so the ports are
	// chosen before any server starts.
	routes := make([]*url.URL, size)
	for i := range routes {
		routes[i] = &url.URL{Scheme: "nats-route", Host: FreeAddr(tb)}
	}
	c := &Cluster{}
	for i := range size {
		_, port, _ := net.SplitHostPort(routes[i].Host)
		clusterPort, _ := strconv.Atoi(port)
		co := server.ClusterOpts{Name: "steward-test", Host: "127.0.0.1", Port: clusterPort}
		solicit := routesOf(tb, cfg, i, routes, &co)
		ns, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("steward-%d", i+1),
			Host:       "127.0.0.1", // routing waits for a client listener
			Port:       -1,
			JetStream:  true,
			StoreDir:   tb.TempDir(),
			NoSigs:     true,
			NoLog:      true,
			Cluster:    co,
			Routes:     solicit,
		})
		if err != nil {
			tb.Fatal(err)
		}
		ns.Start()
		tb.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		c.Nodes = append(c.Nodes, ns)
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
	for _, ns := range c.Nodes {
		c.Buses = append(c.Buses, connectBus(tb, func(opts ...nats.Option) (*nats.Conn, error) {
			return nats.Connect("", append([]nats.Option{nats.InProcessServer(ns), nats.Name("steward-test")}, opts...)...)
		}))
	}
	return c
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

// routesOf returns the routes node i solicits. Every node solicits every
// other, but for a lagging cluster: the lagging node alone solicits its
// peers, each through a proxy that delays what the peer sends, and
// advertises an address no one listens on, so that no peer opens a
// route to it that would bypass the proxies.
func routesOf(tb testing.TB, cfg clusterConfig, i int, routes []*url.URL, co *server.ClusterOpts) []*url.URL {
	if cfg.lagging < 0 {
		return routes
	}
	var out []*url.URL
	for j, r := range routes {
		switch {
		case j == cfg.lagging:
		case i == cfg.lagging:
			out = append(out, &url.URL{Scheme: r.Scheme, Host: startLagProxy(tb, r.Host, cfg.lag).addr()})
		default:
			out = append(out, r)
		}
	}
	if i == cfg.lagging {
		co.Advertise = "127.0.0.1:1"
	}
	return out
}
