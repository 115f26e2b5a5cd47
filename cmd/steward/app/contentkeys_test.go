package app

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestContentKeysFlag: task keys by default, shared on request, and
// anything else refused naming the flag.
func TestContentKeysFlag(t *testing.T) {
	for _, c := range []struct {
		args   []string
		shared bool
		err    bool
	}{
		{nil, false, false},
		{[]string{"--content-keys", "task"}, false, false},
		{[]string{"--content-keys", "shared"}, true, false},
		{[]string{"--content-keys", "hash"}, false, true},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f ContentKeysFlag
		f.register(fs)
		err := fs.Parse(c.args)
		switch {
		case c.err && (err == nil || !strings.Contains(err.Error(), "-content-keys")):
			t.Errorf("%v: error %v, want one naming --content-keys", c.args, err)
		case !c.err && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case f.Shared() != c.shared:
			t.Errorf("%v: Shared() = %v, want %v", c.args, f.Shared(), c.shared)
		}
	}
}
