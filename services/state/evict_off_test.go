package state_test

import (
	"context"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestAStubRevivesWithEvictionOff: a plane started with eviction off
// (--evict-after 0) from a snapshot that holds stubs still revives a
// stub an event moves: its view, list row and metrics become the fold of
// the whole log's, not the stub's for ever.
func TestAStubRevivesWithEvictionOff(t *testing.T) {
	env := stewardtest.NewEnv(t)
	writeMetricsHistories(t, env)
	views := openViews(t, env)
	p, client, c := evictingPlane(t, env, state.Config{Views: views})
	gone := ended(t, client)
	evictAll(t, p, c, gone)
	if _, err := p.SaveSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Stop()
	off := startPlane(t, env.Log, env.Logger, state.Config{Views: views, EvictAfter: -1, Now: c.now, RedriveAfter: 1000 * time.Hour})
	if !off.Views().Evicted("denied") {
		t.Fatal("the plane did not start from the snapshot's stubs")
	}
	env.Append("denied", &stewardv1.FindingRecorded{Finding: &stewardv1.Finding{
		FindingId: "f-later", Kind: stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION, Description: "found after the eviction",
	}})
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return !off.Views().Evicted("denied"), "the stub a finding moved is not revived"
	})
	whole := follow(t, env.Log)
	caughtUp(t, env, whole)
	caughtUp(t, env, off.Views())
	if w, g := metricsText(t, state.NewTaskCollector(whole)), metricsText(t, state.NewTaskCollector(off.Views())); w != g {
		t.Errorf("the metrics are not the whole log's:\n want %s\n got  %s", w, g)
	}
}
