package app

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestToolFlags: --tool-egress-allow and --reserved-tool-names take
// comma-separated lists and repeat, in dev and serve; a range that does
// not parse is refused, naming the flag and the value.
func TestToolFlags(t *testing.T) {
	for _, mode := range []string{"dev", "serve"} {
		m := NewServer(&bytes.Buffer{}, &bytes.Buffer{})
		args := []string{"--tool-egress-allow", "10.0.0.0/8, 127.0.0.1", "--tool-egress-allow", "fd00::/8",
			"--reserved-tool-names", "billing, notify", "--reserved-tool-names", "ledger"}
		if mode == "serve" {
			args = append(args, "--nats", "nats://n:4222", "--plane", "execution", "--insecure")
		}
		if err := m.ParseFlags(mode, args); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("fd00::/8")}
		if !slices.Equal(m.EgressAllow, want) || !slices.Equal(m.ReservedTools, []string{"billing", "notify", "ledger"}) {
			t.Errorf("%s: allow %v, reserved %v", mode, m.EgressAllow, m.ReservedTools)
		}
	}
	var stderr bytes.Buffer
	m := NewServer(&bytes.Buffer{}, &stderr)
	if err := m.ParseFlags("dev", []string{"--tool-egress-allow", "10.0.0.0/33"}); err == nil || !strings.Contains(stderr.String(), "tool-egress-allow") || !strings.Contains(stderr.String(), "10.0.0.0/33") {
		t.Errorf("a range that does not parse: %v, %q", err, stderr.String())
	}
}
