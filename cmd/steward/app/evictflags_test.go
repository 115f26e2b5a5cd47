package app

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/services/state"
)

// parseFlags parses args with the flags register registers, and returns
// what check says of them.
func parseFlags(t *testing.T, args []string, register func(*flag.FlagSet), check func() error) error {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return check()
}

// TestEvictFlags: the default is the state plane's, 0 never evicts, and an
// age outside 1m–720h is refused, naming the flag.
func TestEvictFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration // the state plane's EvictAfter
		err  string
	}{
		{nil, state.DefaultEvictAfter, ""},
		{[]string{"--evict-after", "0"}, -1, ""},
		{[]string{"--evict-after", "24h"}, 24 * time.Hour, ""},
		{[]string{"--evict-after", "30s"}, 0, "--evict-after"},
		{[]string{"--evict-after", "1000h"}, 0, "--evict-after"},
	} {
		var f EvictFlags
		err := parseFlags(t, c.args, f.register, f.check)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.err)
		case c.err == "" && f.config(state.Config{}).EvictAfter != c.want:
			t.Errorf("%v: EvictAfter %s, want %s", c.args, f.config(state.Config{}).EvictAfter, c.want)
		}
	}
}
