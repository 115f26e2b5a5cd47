package app

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/services/state"
)

// SnapshotFlags say how often the state plane writes a snapshot of its
// task views, which it starts from (docs/snapshots.md).
type SnapshotFlags struct {
	// Every is how many events the views may move on before a snapshot;
	// 0 writes none and starts from the start of the log.
	Every uint64
	// Interval is how long a snapshot may age while any event came.
	Interval time.Duration
}

func (f *SnapshotFlags) register(fs *flag.FlagSet) {
	fs.Uint64Var(&f.Every, "snapshot-every", state.DefaultSnapshotEvery, "how many events the state plane's views may move on before it writes a snapshot of them, which a start loads instead of folding the whole log; 0 writes none and reads none (state plane; `N`; see docs/snapshots.md)")
	fs.DurationVar(&f.Interval, "snapshot-interval", state.DefaultSnapshotInterval, "how old the newest snapshot of the state plane's views may grow while events come before another is written (state plane; `DURATION`, 1m–24h)")
}

func (f *SnapshotFlags) check() error {
	if f.Interval < time.Minute || f.Interval > 24*time.Hour {
		return fmt.Errorf("--snapshot-interval: %s is outside 1m–24h", f.Interval)
	}
	return nil
}

// config returns cfg with the flags' settings and the snapshot bucket,
// opened through the state plane's own NATS user where it has one
// (steward dev); none when --snapshot-every is 0.
func (f *SnapshotFlags) config(ctx context.Context, m *Server, js jetstream.JetStream, cfg state.Config) (state.Config, error) {
	if f.Every == 0 {
		return cfg, nil
	}
	if w, ok := m.writers[state.PlaneName]; ok {
		js = w
	}
	views, err := state.OpenViewStore(ctx, js, m.Replicas)
	if err != nil {
		return cfg, err
	}
	cfg.Views, cfg.SnapshotEvery, cfg.SnapshotInterval = views, f.Every, f.Interval
	info, ok := debug.ReadBuildInfo()
	cfg.Build = snapshotBuild(stamp, info, ok)
	return cfg, nil
}

// snapshotBuild names this binary in the state plane's snapshots, which
// a plane of another name refuses: by its stamp, as steward version does.
// A release build records no version or commit of the toolchain's
// (-buildvcs=false), and the state plane, reading only those, would name
// every release alike and load another release's views as its own.
func snapshotBuild(stamp string, info *debug.BuildInfo, ok bool) string {
	b := readBuildInfo(stamp, info, ok)
	name := b.Version + " " + b.Commit
	if b.Dirty {
		name += " dirty"
	}
	return name
}
