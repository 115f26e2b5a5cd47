package e2e_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// upgradeFrom is the build TestRollingUpgrade starts from: issue 35's
// canary runs merged, before rollouts (event payloads 102–106) and
// fallbacks landed, so the build under test writes event types and fields
// the earlier one has never seen.
const upgradeFrom = "3fa2337409750b6782135bbe30c3ae6c243651c4"

// upgradeOrder is the order the planes are upgraded in, one at a time and
// replica by replica: the readers of the log before its writers, as
// docs/compatibility.md advises. A plane that reacts to a type added since
// the last release comes before the plane that writes it
// (TestNewTypesAreReactedToBeforeTheyAreWritten). The doc has control's
// and governance's replicas replaced at once, for the reactions a newer
// build adds; from upgradeFrom that is a rollout's count of its tasks,
// and this load starts no rollout.
var upgradeOrder = []string{"state", "governance", "execution", "control"}

// TestRollingUpgrade is a rolling deploy under load: every plane of the
// cluster deployment starts as the earlier build (upgradeFrom, built from
// a git worktree and cached by commit under TMPDIR); `steward nats-streams`
// of this build adds the event stream's new subjects; then each replica of
// each plane in turn gets SIGTERM, as Kubernetes stops a pod, and starts
// again as the build under test, so that for a while the two builds run
// side by side as replicas of one plane, sharing its consumers. The end
// state is the load tests': every task started and holds its credential,
// every accepted action ended SUCCEEDED and its tool was called once (0
// duplicates), nothing set aside, every chain verifies — through the audit
// service and with `steward audit verify` — and no consumer has an event
// left that it was never given (0 lost).
//
// CI runs the short version: two replicas of each plane, a task every
// 125 ms with two reads each, 1 s of load after each upgrade; 60–110 s on
// two shared cores, plus the earlier build's first compile (50 s of CPU; 6
// min of wall time on a machine six builds share). A longer one:
//
//	STEWARD_UPGRADE_DWELL=10s STEWARD_CLUSTER_ACTIONS=4 go test -count=1 -run 'TestRollingUpgrade$' -v ./e2e/
func TestRollingUpgrade(t *testing.T) {
	earlier := earlierBuild(t, upgradeFrom)
	dwell := time.Second
	if s := os.Getenv("STEWARD_UPGRADE_DWELL"); s != "" {
		var err error
		if dwell, err = time.ParseDuration(s); err != nil || dwell <= 0 {
			t.Fatalf("STEWARD_UPGRADE_DWELL=%q: want a positive duration", s)
		}
	}
	if n := clusterReplicas(t); n < 2 {
		t.Fatalf("STEWARD_CLUSTER_REPLICAS=%d: a rolling upgrade runs two builds of a plane side by side and needs two replicas at least", n)
	}
	l := clusterLoadFromEnv(t, clusterLoad{tasks: 1, actions: 2, clients: 4})
	l.pace = time.Second / 8
	f := startFaultRunOn(t, startClusterDeploymentOf(t, earlier), l, "upgrade")
	f.steady(2 * time.Second)
	// This build's event stream has subjects the earlier one's lacks,
	// which no plane may add: the upgrade's first step is the operator's.
	admin := strings.Replace(f.d.cluster.ClientURL(0), "nats://", "nats://"+url.UserPassword(clusterAdmin, clusterPassword).String()+"@", 1)
	if out := run(t, 0, "nats-streams", "--nats", admin, "--replicas", "3"); !strings.Contains(out, "steward.rollout.>") {
		t.Errorf("steward nats-streams added no rollout subject to the earlier build's stream:\n%s", out)
	}
	for _, plane := range upgradeOrder {
		for _, name := range f.d.replicaNames(plane) {
			f.upgrade(name, dwell)
		}
	}
	f.steady(2 * time.Second)
	d, r := f.d, f.r
	lat, endings := f.end(true)
	unconsumed(t, d)
	unverified := verifyWithCLI(t, d, r.tasks)
	t.Logf("rolling upgrade from %.7s: %d tasks, %d actions accepted, %d succeeded; propose→ended p50 %s, p99 %s, max %s; answers %v; "+
		"every consumer settled; %d chains refused by steward audit verify",
		upgradeFrom, len(r.tasks), len(r.actions), len(lat), percentile(lat, 50).Round(time.Millisecond), percentile(lat, 99).Round(time.Millisecond),
		percentile(lat, 100).Round(time.Millisecond), r.answers, unverified)
	f.report(lat, endings, clusterFaultPause, clusterFaultLatency)
	t.Logf("plane logs: %s", d.symptoms())
}

// upgrade stops the process name with SIGTERM, starts it again as the
// build under test, and lets the load run on for dwell.
func (f *faultRun) upgrade(name string, dwell time.Duration) {
	f.t.Helper()
	f.mark("upgrade " + name)
	f.d.terminate(f.t, name)
	f.d.mu.Lock()
	f.d.bins[name] = binary
	f.d.mu.Unlock()
	f.d.restart(f.t, name)
	f.progress(dwell)
}

// unconsumed waits until no durable consumer of the event stream has an
// event it was not given or has not settled: one that no build's replica
// took would be lost.
func unconsumed(t *testing.T, d *clusterDeployment) {
	t.Helper()
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		lags, err := eventlog.ConsumerLags(context.Background(), d.cluster.Bus(0).JS, eventlog.DefaultStream)
		if err != nil {
			return false, err.Error()
		}
		var behind []string
		for _, lag := range lags {
			if lag.Pending > 0 || lag.AckPending > 0 {
				behind = append(behind, fmt.Sprintf("%s: %d pending, %d unacknowledged", lag.Consumer, lag.Pending, lag.AckPending))
			}
		}
		return len(behind) == 0, "events left on the consumers after the upgrade: " + strings.Join(behind, "; ")
	})
}

// verifyWithCLI runs `steward audit verify` (the build under test) on
// every task against a state plane, with governance's key trusted, and
// returns how many it refused, each reported.
func verifyWithCLI(t *testing.T, d *clusterDeployment, tasks []string) int {
	t.Helper()
	key := d.base.permitKey(t, d.governance)
	var addr string
	d.mu.Lock()
	for _, name := range d.names {
		if p := d.procs[name]; p.plane == "state" && !p.down {
			addr = strings.TrimPrefix(p.url, "http://")
		}
	}
	d.mu.Unlock()
	refused := 0
	for _, id := range tasks {
		out, err := exec.Command(binary, "audit", "verify", "--task", id, "--addr", addr, "--trust-key", key).CombinedOutput()
		if err != nil {
			refused++
			t.Errorf("steward audit verify --task %s: %v\n%s", id, err, out)
		}
	}
	return refused
}

// earlierBuild returns the steward binary built at commit, building it
// the first time from a git worktree of this clone into TMPDIR, where
// later runs find it: the Go build cache keeps the dependencies, but the
// project's packages at another commit compile anew.
func earlierBuild(t *testing.T, commit string) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "steward-upgrade-"+commit)
	bin := filepath.Join(dir, "steward")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if out, err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("the earlier build %s is not in this clone (a shallow one? git fetch --unshallow): %v %s", commit, err, out)
	}
	src := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command("git", "worktree", "add", "--quiet", "--detach", src, commit).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add %s: %v\n%s", commit, err, out)
	}
	defer func() { _ = exec.Command("git", "worktree", "remove", "--force", src).Run() }()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	part, err := os.CreateTemp(dir, "steward-*.part")
	if err != nil {
		t.Fatal(err)
	}
	part.Close()
	build := exec.Command("go", "build", "-o", part.Name(), "./cmd/steward")
	build.Dir = src
	start := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", commit, err, out)
	}
	t.Logf("built the earlier build %.7s in %s", commit, time.Since(start).Round(time.Second))
	// A rename, so that a run beside this one never finds half a binary.
	if err := os.Rename(part.Name(), bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
