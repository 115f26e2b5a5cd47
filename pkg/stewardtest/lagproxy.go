package stewardtest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// lagProxy forwards TCP connections to target and holds back what target
// sends for delay, in order: a route through it makes the node at the
// other end hear its peers late, as a follower on a slow link or a busy
// machine does.
type lagProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	mu     sync.Mutex
	conns  []net.Conn
}

func startLagProxy(tb testing.TB, target string, delay time.Duration) *lagProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &lagProxy{ln: ln, target: target, delay: delay}
	go p.serve()
	tb.Cleanup(p.close)
	return p
}

func (p *lagProxy) addr() string { return p.ln.Addr().String() }

func (p *lagProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		go p.late(in, out)
	}
}

// late copies from to dst, each chunk delay after it was read.
func (p *lagProxy) late(dst, from net.Conn) {
	type chunk struct {
		due  time.Time
		data []byte
	}
	q := make(chan chunk, 1<<14)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := from.Read(buf)
			if n > 0 {
				q <- chunk{time.Now().Add(p.delay), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	dst.Close()
}

func (p *lagProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}
