// Package egress is the rule for where a tenant's tool may send Steward:
// not inside. A tenant's tool-admin names its tool's URLs, Steward calls
// them and hands the reply to the tenant as a result, so an address on
// loopback, link-local (a cloud's metadata service), a private range, or
// one of this machine's own would let a tenant read what only Steward
// can reach. The rule refuses those unless the platform allows a range
// explicitly; Steward's own listeners are refused even then.
//
// A name is judged by the addresses it resolves to: every one must pass.
// The rule is checked when a tool is registered (CheckURL) and again on
// every connection (Transport), on the address actually dialed, so a name
// that resolves elsewhere by the time of the call is caught too.
//
// A Rule is safe for concurrent use.
package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Resolver finds a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is what a Rule allows besides the public internet.
type Config struct {
	// Allow are ranges the platform lets tenants' tools reach though the
	// rule would refuse them (a tool service on the private network).
	Allow []netip.Prefix
	// Self are Steward's own listeners (its API, its NATS): refused even
	// within Allow. An unspecified address (0.0.0.0, ::) stands for every
	// address of this machine.
	Self []netip.AddrPort
	// Resolver resolves names; net.DefaultResolver when nil.
	Resolver Resolver
	// Local lists this machine's addresses; the interfaces' when nil.
	Local func() []netip.Addr
}

// Rule is the egress rule for tenants' tools.
type Rule struct {
	cfg Config
}

// New returns the rule cfg describes.
func New(cfg Config) *Rule {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Local == nil {
		cfg.Local = interfaceAddrs
	}
	return &Rule{cfg: cfg}
}

// Refusal is the rule refusing an address. Callers tell it from other
// failures with errors.As: it is no passing fault, and asking again gets
// the same answer.
type Refusal struct {
	// Host is the name or address the URL gave.
	Host string
	// Addr is the address refused.
	Addr netip.Addr
	// Why names the range.
	Why string
}

func (e *Refusal) Error() string {
	if e.Host != e.Addr.String() {
		return fmt.Sprintf("%s resolves to %s, %s: tenants' tools may not reach it (docs/tenants.md#tools)", e.Host, e.Addr, e.Why)
	}
	return fmt.Sprintf("%s is %s: tenants' tools may not reach it (docs/tenants.md#tools)", e.Addr, e.Why)
}

// inside are the ranges a tenant's tool may not reach unless allowed,
// each with what it is. IPv4-mapped IPv6 addresses are judged as IPv4.
var inside = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network" (0.0.0.0/8), which reaches this machine`},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address (10.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address (100.64.0.0/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address (127.0.0.0/8)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (169.254.0.0/16), where cloud metadata services answer"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address (172.16.0.0/12)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address (192.168.0.0/16)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address (198.18.0.0/15)"},
	{netip.MustParsePrefix("224.0.0.0/3"), "a multicast or reserved address (224.0.0.0/3)"},
	{netip.MustParsePrefix("::/128"), "the unspecified address (::)"},
	{netip.MustParsePrefix("::1/128"), "the loopback address (::1)"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address (64:ff9b::/96), which may embed an inside IPv4 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local NAT64 address (64:ff9b:1::/48)"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo address (2001::/32), which may embed an inside IPv4 address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address (2002::/16), which may embed an inside IPv4 address"},
	{netip.MustParsePrefix("fc00::/7"), "a unique local address (fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address (fe80::/10)"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address (ff00::/8)"},
}

// Check judges one address a connection would go to: nil, or a Refusal.
func (r *Rule) Check(host string, to netip.AddrPort) error {
	ip := to.Addr().Unmap()
	refuse := func(why string) error { return &Refusal{Host: host, Addr: ip, Why: why} }
	if r.self(ip, to.Port()) {
		return refuse(fmt.Sprintf("Steward's own listener (port %d)", to.Port()))
	}
	for _, p := range r.cfg.Allow {
		if p.Contains(ip) {
			return nil
		}
	}
	for _, in := range inside {
		if in.prefix.Contains(ip) {
			return refuse(in.why)
		}
	}
	for _, l := range r.cfg.Local() {
		if l.Unmap() == ip {
			return refuse("an address of this machine")
		}
	}
	return nil
}

// self reports whether ip:port is one of Steward's own listeners.
func (r *Rule) self(ip netip.Addr, port uint16) bool {
	for _, s := range r.cfg.Self {
		if s.Port() != port {
			continue
		}
		a := s.Addr().Unmap()
		if a == ip || a.IsUnspecified() && (ip.IsLoopback() || ip.IsUnspecified() || r.local(ip)) {
			return true
		}
	}
	return false
}

func (r *Rule) local(ip netip.Addr) bool {
	for _, l := range r.cfg.Local() {
		if l.Unmap() == ip {
			return true
		}
	}
	return false
}

// CheckURL resolves raw's host and checks every address it resolves to,
// at raw's port (the scheme's when it names none). A URL that does not
// parse, or a name that does not resolve, is an error too: a tool nobody
// can judge is not registered.
func (r *Rule) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	_, err = r.resolve(ctx, net.JoinHostPort(u.Hostname(), port))
	return err
}

// resolve returns the addresses of hostport, each checked; any refused
// refuses the name, so that one name cannot offer a public address to the
// check and an inside one to the dial.
func (r *Rule) resolve(ctx context.Context, hostport string) ([]netip.AddrPort, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	port, err := net.LookupPort("tcp", portText)
	if err != nil {
		return nil, err
	}
	ips, err := r.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	out := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		to := netip.AddrPortFrom(ip, uint16(port))
		if err := r.Check(host, to); err != nil {
			return nil, err
		}
		out = append(out, to)
	}
	return out, nil
}

func (r *Rule) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{ip}, nil
	}
	ips, err := r.cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%s resolves to no address", host)
	}
	return ips, nil
}

// ParseAllow reads a comma-separated list of CIDR ranges or single
// addresses, as --tool-egress-allow takes it.
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR range or an address", f)
		}
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

// Listeners turns listen addresses (HOST:PORT, as flags give them) into
// Config.Self: a name or an empty host stands for every address of this
// machine. One without a port is left out.
func Listeners(addrs ...string) []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range addrs {
		host, portText, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		port, err := net.LookupPort("tcp", portText)
		if err != nil {
			continue
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			ip = netip.IPv4Unspecified()
		}
		out = append(out, netip.AddrPortFrom(ip, uint16(port)))
	}
	return out
}
