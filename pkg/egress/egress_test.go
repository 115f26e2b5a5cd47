package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/egress"
)

// TestRuleRefusesInsideUnlessAllowed: every inside range is refused, an
// IPv4-mapped address as its IPv4 one, this machine's addresses too; an
// allowed range is let through, except Steward's own listeners.
func TestRuleRefusesInsideUnlessAllowed(t *testing.T) {
	machine := netip.MustParseAddr("198.51.100.9")
	local := func() []netip.Addr { return []netip.Addr{machine} }
	strict := egress.New(egress.Config{Local: local, Self: egress.Listeners("0.0.0.0:7700", "127.0.0.1:4222")})
	open := egress.New(egress.Config{Local: local, Self: egress.Listeners(":7700", "127.0.0.1:4222"),
		Allow: mustAllow(t, "127.0.0.0/8, 10.0.0.0/8,198.51.100.9")})
	for _, c := range []struct {
		to           string
		strict, open string // "" for let through, else words of the refusal
	}{
		{"203.0.113.5:443", "", ""},
		{"127.0.0.1:8080", "loopback", ""},
		{"[::ffff:127.0.0.1]:8080", "loopback", ""},
		{"127.0.0.1:7700", "Steward's own", "Steward's own"},
		{"198.51.100.9:7700", "Steward's own", "Steward's own"},
		{"127.0.0.1:4222", "Steward's own", "Steward's own"},
		{"198.51.100.9:80", "this machine", ""},
		{"169.254.169.254:80", "link-local", "link-local"},
		{"10.1.2.3:80", "private", ""},
		{"172.16.0.1:80", "private", "private"},
		{"192.168.1.1:80", "private", "private"},
		{"0.0.0.0:80", "this network", "this network"},
		{"[::1]:80", "loopback", "loopback"},
		{"[::]:80", "unspecified", "unspecified"},
		{"[fd00::1]:80", "unique local", "unique local"},
		{"[fe80::1]:80", "link-local", "link-local"},
		{"[64:ff9b::7f00:1]:80", "NAT64", "NAT64"},
		{"[2001:db8::1]:80", "", ""},
	} {
		to := netip.MustParseAddrPort(c.to)
		for rule, want := range map[*egress.Rule]string{strict: c.strict, open: c.open} {
			err := rule.Check(to.Addr().String(), to)
			var refusal *egress.Refusal
			switch {
			case want == "" && err != nil:
				t.Errorf("%s: %v; want let through", c.to, err)
			case want != "" && (!errors.As(err, &refusal) || !strings.Contains(err.Error(), want)):
				t.Errorf("%s: %v; want refused as %s", c.to, err, want)
			}
		}
	}
}

// TestTransportDialsOnlyWhatItChecked: a name resolving inside is refused
// before any connection, and a refused dial is told apart by errors.As.
func TestTransportDialsOnlyWhatItChecked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the server on loopback was called")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	rule := egress.New(egress.Config{Resolver: fixed("127.0.0.1")})
	client := &http.Client{Transport: rule.Transport()}
	for _, url := range []string{srv.URL, "http://tool.test:" + port} {
		_, err := client.Get(url)
		var refusal *egress.Refusal
		if !errors.As(err, &refusal) {
			t.Errorf("GET %s: %v; want a Refusal", url, err)
		}
	}
	if err := rule.CheckURL(context.Background(), "http://tool.test/x"); err == nil || !strings.Contains(err.Error(), "tool.test resolves to 127.0.0.1") {
		t.Errorf("CheckURL of a name resolving to loopback: %v", err)
	}
}

// fixed resolves every name to one address.
type fixed string

func (f fixed) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr(string(f))}, nil
}

func mustAllow(t *testing.T, s string) []netip.Prefix {
	t.Helper()
	p, err := egress.ParseAllow(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
