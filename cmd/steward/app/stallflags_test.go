package app

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/services/state"
)

// TestStallFlags: the defaults are the state plane's, and a bound the
// watchdog could not keep is refused, naming the flag.
func TestStallFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string
	}{
		{nil, ""},
		{[]string{"--redrive-after", "10s", "--stall-check-every", "1s"}, ""},
		{[]string{"--redrive-after", "500ms"}, "--redrive-after"},
		{[]string{"--redrive-after", "2h"}, "--redrive-after"},
		{[]string{"--stall-check-every", "10ms"}, "--stall-check-every"},
		{[]string{"--redrive-after", "5s", "--stall-check-every", "5s"}, "not under --redrive-after"},
	} {
		var f StallFlags
		err := parseFlags(t, c.args, f.register, f.check)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.err)
		}
		if c.args == nil {
			cfg := f.config(state.Config{})
			if cfg.RedriveAfter != state.DefaultRedriveAfter || cfg.StallCheckEvery != state.DefaultStallCheckEvery {
				t.Errorf("defaults %s, %s", cfg.RedriveAfter, cfg.StallCheckEvery)
			}
		}
	}
}
