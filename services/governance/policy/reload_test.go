package policy_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/governance/policy"
)

func TestReload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeBundle(t, dir, map[string]string{"p.rego": allowAll})
	engine, err := policy.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rev1 := engine.Revision()
	mustDecide(t, engine, policy.Allow, rev1)

	if changed, err := engine.Reload(ctx); changed || err != nil {
		t.Fatalf("Reload of an unchanged dir = %v, %v; want false, nil", changed, err)
	}
	// A test file is not policy: no new revision.
	writeBundle(t, dir, map[string]string{"p_test.rego": "package steward.policy_test\n\ntest_x if true\n"})
	if changed, err := engine.Reload(ctx); changed || err != nil {
		t.Fatalf("Reload after adding a test = %v, %v; want false, nil", changed, err)
	}

	writeBundle(t, dir, map[string]string{"p.rego": denyAll})
	changed, err := engine.Reload(ctx)
	if !changed || err != nil {
		t.Fatalf("Reload after an edit = %v, %v; want true, nil", changed, err)
	}
	rev2 := engine.Revision()
	if rev2 == rev1 || !revisionPattern.MatchString(rev2) {
		t.Fatalf("Revision after reload = %s, was %s", rev2, rev1)
	}
	mustDecide(t, engine, policy.Deny, rev2)

	// A bundle that does not compile never replaces one that does.
	writeBundle(t, dir, map[string]string{"p.rego": "package steward.policy\n\ndecision := {\"decision\": \n"})
	changed, err = engine.Reload(ctx)
	if changed || err == nil || !strings.Contains(err.Error(), "p.rego") {
		t.Fatalf("Reload of a broken bundle = %v, %v; want false and an error naming p.rego", changed, err)
	}
	if engine.Revision() != rev2 {
		t.Fatalf("Revision after a failed reload = %s, want %s", engine.Revision(), rev2)
	}
	mustDecide(t, engine, policy.Deny, rev2)

	// Nor does an empty one.
	if err := os.Remove(filepath.Join(dir, "p.rego")); err != nil {
		t.Fatal(err)
	}
	if changed, err := engine.Reload(ctx); changed || err == nil {
		t.Fatalf("Reload of an empty bundle = %v, %v; want false and an error", changed, err)
	}
	mustDecide(t, engine, policy.Deny, rev2)

	// Putting the first policy back brings back its revision.
	writeBundle(t, dir, map[string]string{"p.rego": allowAll})
	if changed, err := engine.Reload(ctx); !changed || err != nil {
		t.Fatalf("Reload after the fix = %v, %v; want true, nil", changed, err)
	}
	mustDecide(t, engine, policy.Allow, rev1)
}

func TestReloadDefaultBundleIsNoOp(t *testing.T) {
	ctx := context.Background()
	engine, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	rev := engine.Revision()
	if changed, err := engine.Reload(ctx); changed || err != nil {
		t.Fatalf("Reload = %v, %v; want false, nil", changed, err)
	}
	if engine.Revision() != rev {
		t.Fatalf("Revision changed: %s → %s", rev, engine.Revision())
	}
}

func mustDecide(t *testing.T, engine *policy.Engine, decision, revision string) {
	t.Helper()
	got, err := engine.Evaluate(context.Background(), actionInput(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.Decision != decision || got.Revision != revision {
		t.Fatalf("Evaluate = %s by %s, want %s by %s", got.Decision, got.Revision, decision, revision)
	}
}

// TestConcurrentEvaluateAndReload evaluates from many goroutines while
// another flips the bundle between two revisions. Every result must come
// whole from one of them: the decision that revision gives, never a mix.
func TestConcurrentEvaluateAndReload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	revisionOf := func(rego string) string {
		e := loadBundle(t, rego)
		return e.Revision()
	}
	want := map[string]string{revisionOf(allowAll): policy.Allow, revisionOf(denyAll): policy.Deny}

	writeBundle(t, dir, map[string]string{"p.rego": allowAll})
	engine, err := policy.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}

	const evaluators = 8
	var (
		stop    atomic.Bool
		reloads atomic.Int64
		seen    sync.Map // revision → struct{}
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		defer stop.Store(true)
		for i := range 40 {
			writeBundle(t, dir, map[string]string{"p.rego": []string{denyAll, allowAll}[i%2]})
			changed, err := engine.Reload(ctx)
			if err != nil || !changed {
				t.Errorf("Reload %d = %v, %v; want true, nil", i, changed, err)
				return
			}
			reloads.Add(1)
			time.Sleep(time.Millisecond) // let evaluators run on each revision
		}
	})
	for range evaluators {
		wg.Go(func() {
			input := actionInput(nil)
			for !stop.Load() {
				got, err := engine.Evaluate(ctx, input)
				if err != nil {
					t.Error(err)
					return
				}
				decision, ok := want[got.Revision]
				if !ok || got.Decision != decision {
					t.Errorf("Evaluate = %s by %q; that revision decides %q", got.Decision, got.Revision, decision)
					return
				}
				seen.Store(got.Revision, struct{}{})
			}
		})
	}
	wg.Wait()
	if reloads.Load() != 40 {
		t.Fatalf("%d reloads, want 40", reloads.Load())
	}
	for rev := range want {
		if _, ok := seen.Load(rev); !ok {
			t.Errorf("no evaluation saw revision %s", rev)
		}
	}
}

func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	writeBundle(t, dir, map[string]string{"p.rego": allowAll})
	engine, err := policy.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rev1 := engine.Revision()
	var logs stewardtest.LogBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		engine.Watch(ctx, 5*time.Millisecond, slog.New(slog.NewTextHandler(&logs, nil)))
	}()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
			return cond(), fmt.Sprintf("no %s; logs:\n%s", what, logs.String())
		})
	}

	writeBundle(t, dir, map[string]string{"p.rego": denyAll})
	waitFor("the new revision", func() bool { return engine.Revision() != rev1 })
	rev2 := engine.Revision()
	mustDecide(t, engine, policy.Deny, rev2)
	waitFor("a reload log line", func() bool { return strings.Contains(logs.String(), "policy reloaded") })

	writeBundle(t, dir, map[string]string{"p.rego": "package steward.policy\n\ndecision := \n"})
	waitFor("a reload error log line", func() bool { return strings.Contains(logs.String(), "policy reload failed") })
	time.Sleep(50 * time.Millisecond) // several more ticks over the same broken file
	if n := strings.Count(logs.String(), "policy reload failed"); n != 1 {
		t.Errorf("the same failure was logged %d times, want once", n)
	}
	mustDecide(t, engine, policy.Deny, rev2)

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return after its context ended")
	}
}
