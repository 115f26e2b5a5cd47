package app

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestSyncFlag: interval by default, always on request, anything else
// refused naming the flag; and what it says is what the embedded server
// is configured with.
func TestSyncFlag(t *testing.T) {
	for _, c := range []struct {
		args   []string
		always bool
		err    bool
	}{
		{nil, false, false},
		{[]string{"--sync", "interval"}, false, false},
		{[]string{"--sync", "always"}, true, false},
		{[]string{"--sync", "never"}, false, true},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var m Server
		m.Sync.register(fs)
		err := fs.Parse(c.args)
		switch {
		case c.err && (err == nil || !strings.Contains(err.Error(), "-sync")):
			t.Errorf("%v: error %v, want one naming --sync", c.args, err)
		case !c.err && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case m.Sync.Always() != c.always || m.embeddedConfig(nil).SyncAlways != c.always:
			t.Errorf("%v: Always() = %v, the embedded server's SyncAlways %v; want %v", c.args, m.Sync.Always(), m.embeddedConfig(nil).SyncAlways, c.always)
		}
	}
}
