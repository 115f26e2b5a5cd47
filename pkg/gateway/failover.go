package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// NewTransport returns a transport to the planes: HTTP/2 only, cleartext
// (h2c) to http:// replicas and over TLS to https:// ones, whose
// certificates roots sign (the system's CAs when nil). It pings a
// connection that has gone quiet, so that one to a replica whose machine
// vanished without a reset is found dead in seconds, not at the kernel's
// TCP timeout.
func NewTransport(roots *x509.CertPool) *http.Transport {
	var protocols http.Protocols
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Transport{
		Protocols:         &protocols,
		DialContext:       (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 15 * time.Second,
			PingTimeout:     5 * time.Second,
			// Smaller windows than the default, so that a caller who
			// stops reading stops the plane's answer sooner. Not yet
			// shown to keep a slow caller's answers at the plane, within
			// its budget (pkg/rpc): see docs/gateway.md, limits.
			MaxReceiveBufferPerStream:     receiveBufferPerStream,
			MaxReceiveBufferPerConnection: receiveBufferPerConnection,
		},
	}
}

const (
	receiveBufferPerStream     = 256 << 10
	receiveBufferPerConnection = 4 << 20
)

// failover sends a call to its plane's replicas in turn (plane.order) until
// one takes it. It goes on to the next replica only when the call cannot
// have reached the last one: the connection was never made and not a byte
// of the body was read. A replica that refused a connection is marked
// down at once; the health checks bring it back. Nothing else a call
// meets marks a replica down — a caller could provoke it (a body cut
// short, a malformed chunk) and take healthy replicas out of service —
// so a replica that fails otherwise waits for its next health check.
type failover struct {
	transport http.RoundTripper
	g         *Gateway
}

func (f *failover) RoundTrip(req *http.Request) (*http.Response, error) {
	p, _ := req.Context().Value(planeKey{}).(*plane)
	if p == nil {
		return nil, errors.New("gateway: a call without a plane") // route always sets one
	}
	body := &heldBody{body: req.Body}
	var last error
	replicas := p.order()
	for _, r := range replicas {
		out := req.Clone(req.Context())
		out.URL.Scheme, out.URL.Host = r.url.Scheme, r.url.Host
		if req.Body != nil && req.Body != http.NoBody {
			out.Body = body
		}
		resp, err := f.transport.RoundTrip(out)
		if err == nil {
			f.g.markUp(r)
			return resp, nil
		}
		if req.Context().Err() != nil {
			return nil, err // the caller left
		}
		if bad := body.err.Load(); bad != nil {
			return nil, &badBody{err: *bad}
		}
		last = fmt.Errorf("replica %s: %w", r.url, err)
		if !notConnected(err) {
			return nil, &undelivered{plane: p.name, sent: true, err: last}
		}
		f.g.markDown(r, err.Error())
		if body.read.Load() {
			return nil, &undelivered{plane: p.name, sent: true, err: last}
		}
	}
	return nil, &undelivered{plane: p.name, tried: len(replicas), err: last}
}

// undelivered is a call no replica answered: sent to one that failed it
// on the way, or taken by none of those tried.
type undelivered struct {
	plane string
	sent  bool
	tried int
	err   error
}

func (u *undelivered) Error() string {
	return u.caller() + ": " + u.err.Error()
}

func (u *undelivered) Unwrap() error { return u.err }

// caller is what the caller is told: no replica's address or error, which
// are the gateway's log's.
func (u *undelivered) caller() string {
	if u.sent {
		return fmt.Sprintf("the %s plane failed the call on the way, and may have done it: call again with the same request_id", u.plane)
	}
	return fmt.Sprintf("no replica of the %s plane took the call (%d tried)", u.plane, u.tried)
}

// badBody is a call whose body could not be read from its caller (cut
// short, or a malformed chunk): the caller's fault, not a replica's.
type badBody struct{ err error }

func (b *badBody) Error() string { return "the call's body could not be read: " + b.err.Error() }

func (b *badBody) Unwrap() error { return b.err }

// notConnected reports whether err means no connection was made: the
// request cannot have been sent.
func notConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// heldBody is a call's body handed to one attempt after another: the
// transport closes the body of a failed attempt, which must not close the
// caller's (the server does that), and an attempt that read any of it
// ends the trying. err is the first error reading it from the caller
// gave, but its end, kept before the transport sees the error.
type heldBody struct {
	body io.ReadCloser
	read atomic.Bool
	err  atomic.Pointer[error]
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	n, err := b.body.Read(p)
	if err != nil && err != io.EOF {
		b.err.CompareAndSwap(nil, &err)
	}
	return n, err
}

func (b *heldBody) Close() error { return nil }
