package deploy_test

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// freePort returns a loopback port that nothing listens on and that c has
// not handed out, from below the kernel's ephemeral range. A port from
// that range (what a listen on port 0 gives) is free only until the pod
// binds it: meanwhile any outgoing connection, the pods' own to NATS
// among them, may take it as its local port, and the pod then fails to
// bind it at every restart.
func (c *cluster) freePort(t *testing.T) int {
	t.Helper()
	low := ephemeralLow()
	for range 1000 {
		port := 20000 + rand.IntN(low-20000)
		if c.used[port] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		_ = ln.Close()
		c.used[port] = true
		return port
	}
	t.Fatalf("no free loopback port in [20000, %d)", low)
	return 0
}

// ephemeralLow is where the kernel's range of ports for outgoing
// connections starts (Linux's default when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= 21000 {
		return 32768
	}
	return low
}
