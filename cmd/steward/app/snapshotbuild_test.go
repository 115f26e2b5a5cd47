package app

import (
	"runtime/debug"
	"testing"
)

// TestASnapshotNamesTheReleaseBuild: a release build (scripts/release, the
// Dockerfile) is built with -buildvcs=false, so the toolchain records
// neither version nor commit and every release reads as "(devel)". The
// state plane's snapshots must name the build by its stamp, else a newer
// release loads an older one's views — folded by another fold, and
// withholding for good the tasks that hold the newer release's events
// (docs/compatibility.md) — as its own.
func TestASnapshotNamesTheReleaseBuild(t *testing.T) {
	devel := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	older, newer := snapshotBuild("v1.4.0,3fa2337", devel, true), snapshotBuild("v1.5.0,71f5e2d", devel, true)
	if older == newer {
		t.Fatalf("two releases name their snapshots alike: %q", older)
	}
	if dirty := snapshotBuild("v1.5.0,71f5e2d,dirty", devel, true); dirty == newer {
		t.Errorf("a build from a modified tree names its snapshots as the clean one: %q", dirty)
	}
	vcs := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "71f5e2d"}}}
	if got := snapshotBuild("", vcs, true); got == snapshotBuild("", devel, true) {
		t.Errorf("a plain go build names its snapshots without its commit: %q", got)
	}
}
