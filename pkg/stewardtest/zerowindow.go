package stewardtest

import (
	"bytes"
	"net"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// ZeroWindowStreams opens n streams on one cleartext HTTP/2 connection to
// addr, each a POST of body (Connect JSON) to path, after telling the
// server that the client's windows are zero: the server may send no data
// on any of them, so every answer it builds stays in its memory until the
// connection closes (at the end of the test). It is the stalled reader of
// issue 27.
func ZeroWindowStreams(tb testing.TB, addr, path string, body []byte, n int) {
	tb.Helper()
	StalledStreams(tb, addr, path, "application/json", body, 0, n)
}

// StalledStreams is ZeroWindowStreams with the request's content type
// and the client's windows of window bytes: a stream answer (a Connect
// streaming request, "application/connect+json", with an enveloped body)
// can send its first few messages, and then no more.
func StalledStreams(tb testing.TB, addr, path, contentType string, body []byte, window uint32, n int) {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		tb.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}); err != nil {
		tb.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range n {
		id := uint32(2*i + 1)
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", addr}, {":path", path}, {"content-type", contentType}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: len(body) == 0, EndHeaders: true})
		if err == nil && len(body) > 0 {
			err = fr.WriteData(id, true, body)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}
