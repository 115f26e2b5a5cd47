package app

import (
	"flag"
	"fmt"
	"time"

	"github.com/steward-run/steward/services/state"
)

// EvictFlags say how long an ended task keeps its whole view in the state
// plane's memory (docs/capacity.md).
type EvictFlags struct {
	// After is how long after its last event an ended task is evicted;
	// 0 keeps every view whole.
	After time.Duration
}

func (f *EvictFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.After, "evict-after", state.DefaultEvictAfter, "how long after its last event an ended task (accepted, failed, cancelled) keeps its whole view in the state plane's memory; then only its summary stays and reads of the rest go to the log; 0 never evicts (state plane; `DURATION`, 0 or 1m–720h; see docs/capacity.md)")
}

func (f *EvictFlags) check() error {
	if f.After != 0 && (f.After < time.Minute || f.After > 720*time.Hour) {
		return fmt.Errorf("--evict-after: %s is neither 0 nor within 1m–720h", f.After)
	}
	return nil
}

// config returns cfg with the flags' settings.
func (f *EvictFlags) config(cfg state.Config) state.Config {
	cfg.EvictAfter = f.After
	if f.After == 0 {
		cfg.EvictAfter = -1 // never
	}
	return cfg
}
