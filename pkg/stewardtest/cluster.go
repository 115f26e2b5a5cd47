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

// StartCluster runs a JetStream cluster of size servers, routed to each
// other on free ports of 127.0.0.1, and waits until it has a meta leader
// that counts every server as a JetStream peer, so that a stream with size
// replicas can be placed. Clients connect in-process. The servers stop
// when the test ends.
func StartCluster(tb testing.TB, size int) *Cluster {
	tb.Helper()
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
		ns, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("steward-%d", i+1),
			Host:       "127.0.0.1", // routing waits for a client listener
			Port:       -1,
			JetStream:  true,
			StoreDir:   tb.TempDir(),
			NoSigs:     true,
			NoLog:      true,
			Cluster:    server.ClusterOpts{Name: "steward-test", Host: "127.0.0.1", Port: clusterPort},
			Routes:     routes,
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
