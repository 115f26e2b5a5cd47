package rpc_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/rpc"
)

// Shortened connection limits, so that the tests wait for them quickly.
const (
	testHeaderTimeout = 200 * time.Millisecond
	testReadTimeout   = 300 * time.Millisecond
	testIdleTimeout   = 300 * time.Millisecond
	// slack is how much later than its limit a connection may close: a
	// shared machine under -race is slow, but not seconds slow.
	slack = 2 * time.Second
)

// deadlineServer serves /echo (reads the whole body, answers its length)
// and /stream (writes a line every 20 ms for three read timeouts) with the
// shortened limits, and returns its address.
func deadlineServer(t *testing.T) string {
	t.Helper()
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		fmt.Fprintf(w, "%d\n", len(b))
	})
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		end := time.Now().Add(3 * testReadTimeout)
		for i := 0; time.Now().Before(end); i++ {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
			if _, err := fmt.Fprintf(w, "line %d\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		fmt.Fprintln(w, "end")
	})
	srv, err := rpc.Listen("127.0.0.1:0", nil,
		rpc.WithHandler("POST /echo", echo), rpc.WithHandler("GET /stream", stream),
		rpc.WithReadHeaderTimeout(testHeaderTimeout), rpc.WithReadTimeout(testReadTimeout),
		rpc.WithIdleTimeout(testIdleTimeout), rpc.WithMaxConcurrentStreams(7))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(serve(t, srv), "http://")
}

// dial opens a plain TCP connection to addr.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedWithin reads c until the server closes it and fails the test if
// that takes longer than limit+slack after since. It returns what was read.
func closedWithin(t *testing.T, c net.Conn, since time.Time, limit time.Duration) string {
	t.Helper()
	_ = c.SetReadDeadline(since.Add(limit + slack))
	got, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server kept the connection open for %s (limit %s); read %q", limit+slack, limit, got)
	}
	if d := time.Since(since); d < limit/2 {
		t.Errorf("closed after %s, well before the %s limit", d, limit)
	}
	return string(got)
}

// TestSlowClientsAreCutOff: a client that sends headers and then
// withholds or trickles its body, that never finishes its headers, or that
// keeps an idle connection, has it closed once its limit passes.
func TestSlowClientsAreCutOff(t *testing.T) {
	addr := deadlineServer(t)
	t.Run("HTTP/1 body withheld", func(t *testing.T) {
		c := dial(t, addr)
		start := time.Now()
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
		got := closedWithin(t, c, start, testReadTimeout)
		if !strings.HasPrefix(got, "HTTP/1.1 408") {
			t.Errorf("got %q, want a 408 before the close", got)
		}
	})
	t.Run("HTTP/1 body trickled", func(t *testing.T) {
		c := dial(t, addr)
		start := time.Now()
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
		stop := make(chan struct{})
		defer close(stop)
		go func() { // a byte every 10 ms: it would take 1,000 s
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte("x")); err != nil {
						return
					}
				}
			}
		}()
		closedWithin(t, c, start, testReadTimeout)
	})
	t.Run("HTTP/1 headers withheld", func(t *testing.T) {
		c := dial(t, addr)
		start := time.Now()
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: x\r\n")
		closedWithin(t, c, start, testHeaderTimeout)
	})
	t.Run("HTTP/1 keep-alive idle", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		closedWithin(t, c, time.Now(), testIdleTimeout)
	})
	t.Run("HTTP/2 body withheld", func(t *testing.T) {
		body, w := io.Pipe()
		defer w.Close()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), testReadTimeout+slack)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/echo", body)
		resp, err := h2c().Do(req)
		if err != nil {
			t.Fatalf("after %s: %v", time.Since(start), err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || resp.ProtoMajor != 2 {
			t.Fatalf("HTTP/%d %d, want HTTP/2 408", resp.ProtoMajor, resp.StatusCode)
		}
		if d := time.Since(start); d > testReadTimeout+slack {
			t.Fatalf("answered after %s", d)
		}
	})
	t.Run("HTTP/2 idle, and its stream cap", func(t *testing.T) {
		c := dial(t, addr)
		start := time.Now()
		// The client preface and an empty SETTINGS frame, then nothing.
		if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
			t.Fatal(err)
		}
		got := closedWithin(t, c, start, testIdleTimeout)
		if n, ok := maxStreamsSetting([]byte(got)); !ok || n != 7 {
			t.Errorf("the server's SETTINGS say %d concurrent streams (found %v), want 7", n, ok)
		}
	})
}

// TestLongResponsesOutliveTheReadTimeout: the read timeout bounds reading a
// request, never writing a response, so a server stream (WatchTask,
// ReplayTask) lasts as long as it has something to say — over HTTP/1 and
// HTTP/2.
func TestLongResponsesOutliveTheReadTimeout(t *testing.T) {
	addr := deadlineServer(t)
	for name, client := range map[string]*http.Client{"HTTP/1": {}, "HTTP/2": h2c()} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			resp, err := client.Get("http://" + addr + "/stream")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("after %s and %d bytes: %v", time.Since(start), len(b), err)
			}
			if !strings.HasSuffix(string(b), "end\n") || time.Since(start) < 2*testReadTimeout {
				t.Fatalf("after %s: %q", time.Since(start), b)
			}
		})
	}
}

// h2c is a client that speaks cleartext HTTP/2 with prior knowledge.
func h2c() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p, TLSClientConfig: &tls.Config{}}}
}

// maxStreamsSetting finds SETTINGS_MAX_CONCURRENT_STREAMS in the HTTP/2
// frames b starts with.
func maxStreamsSetting(b []byte) (uint32, bool) {
	for len(b) >= 9 {
		n := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		typ, flags := b[3], b[4]
		if len(b) < 9+n {
			break
		}
		payload := b[9 : 9+n]
		if typ == 0x4 && flags&0x1 == 0 { // SETTINGS, not an ACK
			for ; len(payload) >= 6; payload = payload[6:] {
				if binary.BigEndian.Uint16(payload) == 0x3 {
					return binary.BigEndian.Uint32(payload[2:]), true
				}
			}
		}
		b = b[9+n:]
	}
	return 0, false
}
