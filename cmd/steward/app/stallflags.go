package app

import (
	"flag"
	"fmt"
	"time"

	"github.com/steward-run/steward/services/state"
)

// StallFlags say when the state plane's watchdog marks a task stalled,
// which the planes that own its next step answer by doing it again
// (docs/stalls.md).
type StallFlags struct {
	// RedriveAfter is the re-drive bound: how long a task may stay, with
	// no event, where a plane's next step alone moves it on.
	RedriveAfter time.Duration
	// CheckEvery is how often the watchdog looks.
	CheckEvery time.Duration
}

func (f *StallFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.RedriveAfter, "redrive-after", state.DefaultRedriveAfter, "how long a task may stay pending, or an action proposed, evaluated, approved, permitted, claimed or revalidating, with no event on its task, before the task is marked stalled and the plane that owns the next step does it again; a task's timers.stallAfter caps it (state plane; `DURATION`, 1s–1h; see docs/stalls.md)")
	fs.DurationVar(&f.CheckEvery, "stall-check-every", state.DefaultStallCheckEvery, "how often the watchdog looks for stalled tasks (state plane; `DURATION`, 100ms–1m, under --redrive-after)")
}

func (f *StallFlags) check() error {
	switch {
	case f.RedriveAfter < time.Second || f.RedriveAfter > time.Hour:
		return fmt.Errorf("--redrive-after: %s is outside 1s–1h", f.RedriveAfter)
	case f.CheckEvery < 100*time.Millisecond || f.CheckEvery > time.Minute:
		return fmt.Errorf("--stall-check-every: %s is outside 100ms–1m", f.CheckEvery)
	case f.CheckEvery >= f.RedriveAfter:
		return fmt.Errorf("--stall-check-every: %s is not under --redrive-after (%s): the bound would not hold", f.CheckEvery, f.RedriveAfter)
	}
	return nil
}

// config returns cfg with the flags' settings.
func (f *StallFlags) config(cfg state.Config) state.Config {
	cfg.RedriveAfter, cfg.StallCheckEvery = f.RedriveAfter, f.CheckEvery
	return cfg
}
