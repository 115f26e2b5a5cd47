package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Transport returns an HTTP transport whose every connection obeys the
// rule: it resolves the host itself, refuses the name if any address is
// refused, and dials only the addresses it checked — and checks each
// again on the socket, just before it connects. It uses no proxy: a proxy
// would make the dialed address the proxy's, and the rule judges where
// the call goes. Keep its connections apart from other transports': a
// pooled connection opened for a global tool is not one a tenant's may
// reuse.
func (r *Rule) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = r.DialContext
	return t
}

// DialContext dials addr ("host:port") as net.Dialer does, under the rule.
func (r *Rule) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	tos, err := r.resolve(ctx, addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		// The address on the socket, after every translation the
		// resolver and dialer made: what the connection will reach.
		to, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		return r.Check(host, to)
	}}
	var errAll error
	for _, to := range tos {
		conn, err := d.DialContext(ctx, network, to.String())
		if err == nil {
			return conn, nil
		}
		errAll = errors.Join(errAll, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errAll
}
