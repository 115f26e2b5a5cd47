package gateway

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"slices"
)

// resolve makes each cleartext target whose host is a name into one
// replica per address the name has now, keeping the health of those it
// had: a headless Kubernetes Service names each ready pod of a plane, so
// calls spread over the pods and a dead pod is one replica down, where a
// Service's one virtual address would pin the gateway's HTTP/2 connection
// to one pod. An https:// target stays one replica, since its certificate
// names the host, not the addresses; so does a target whose name does not
// resolve now, to be checked (and found down) as it is.
func (g *Gateway) resolve(ctx context.Context, p *plane) {
	had := map[string]*replica{}
	for _, r := range p.current() {
		had[r.url.String()] = r
	}
	var replicas []*replica
	for _, t := range p.targets {
		var addrs []string
		if _, err := netip.ParseAddr(t.Hostname()); err != nil && t.Scheme == "http" {
			addrs, _ = g.cfg.LookupHost(ctx, t.Hostname())
			slices.Sort(addrs)
		}
		if len(addrs) == 0 {
			replicas = append(replicas, keep(had, &replica{plane: p.name, url: t, target: t}))
			continue
		}
		port := t.Port()
		if port == "" {
			port = "80"
		}
		for _, a := range addrs {
			u := &url.URL{Scheme: t.Scheme, Host: net.JoinHostPort(a, port)}
			replicas = append(replicas, keep(had, &replica{plane: p.name, url: u, target: t}))
		}
	}
	p.mu.Lock()
	p.replicas = replicas
	p.mu.Unlock()
}

// keep returns the replica at r's URL that the plane had, with its health,
// or r, new.
func keep(had map[string]*replica, r *replica) *replica {
	if old := had[r.url.String()]; old != nil {
		return old
	}
	return r
}
