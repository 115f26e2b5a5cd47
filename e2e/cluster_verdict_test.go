package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/audit"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// clusterVerdict checks the end state of a load on the cluster and returns
// the propose→ended times of the actions that succeeded, and when each
// ended. It reports every problem it finds, not just the first.
func clusterVerdict(t *testing.T, d *clusterDeployment, r *loadRun, seen map[string]*stewardv1.Task, exactCalls bool) (latencies []time.Duration, endings []time.Time) {
	t.Helper()
	if len(r.failures) > 0 {
		t.Errorf("%d calls failed for good (want only successes, unavailable retried); answers %v; e.g.\n  %s",
			len(r.failures), r.answers, strings.Join(examples(r.failures), "\n  "))
	}
	var unstarted, unserved, uncredentialed []string
	for _, id := range r.tasks {
		tk, ok := seen[id]
		switch {
		case !ok:
			unserved = append(unserved, id)
		case tk.Status == stewardv1.TaskStatus_TASK_STATUS_PENDING:
			unstarted = append(unstarted, id)
		}
		if ok && tk.Credential == nil {
			uncredentialed = append(uncredentialed, id)
		}
	}
	if len(uncredentialed) > 0 {
		t.Errorf("%d of %d tasks hold no credential (governance issued none); e.g. %v", len(uncredentialed), len(r.tasks), examples(uncredentialed))
	}
	if len(unserved) > 0 {
		t.Errorf("%d of %d tasks were never served by the state plane; e.g. %v", len(unserved), len(r.tasks), examples(unserved))
	}
	if len(unstarted) > 0 {
		t.Errorf("%d of %d tasks never started (left PENDING); e.g. %v", len(unstarted), len(r.tasks), examples(unstarted))
	}

	byStatus := map[string]int{}
	var stuck, missing []string
	for _, p := range r.actions {
		var a *stewardv1.Action
		for _, x := range seen[p.taskID].GetActions() {
			if x.ActionId == p.actionID {
				a = x
			}
		}
		if a == nil {
			missing = append(missing, p.taskID+"/"+p.actionID)
			continue
		}
		if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
			byStatus[strings.TrimPrefix(a.Status.String(), "ACTION_STATUS_")]++
			why := ""
			if a.Snapshot != nil {
				why = fmt.Sprintf(" %s %q", a.Snapshot.Decision, a.Snapshot.Reasons)
			}
			stuck = append(stuck, fmt.Sprintf("%s/%s %s%s", p.taskID, p.actionID, a.Status, why))
			continue
		}
		if a.ProposedAt != nil && a.GetOutcome().GetFinishedAt() != nil {
			lat := a.Outcome.FinishedAt.AsTime().Sub(a.ProposedAt.AsTime())
			latencies = append(latencies, lat)
			endings = append(endings, a.Outcome.FinishedAt.AsTime())
			if lat > slowAction {
				t.Logf("slow action %s/%s: %s", p.taskID, p.actionID, stages(a))
			}
		}
		if n := d.tool.Executions(p.opKey); n != 1 {
			t.Errorf("action %s/%s: the tool did the work %d times for op_key %s, want once", p.taskID, p.actionID, n, p.opKey)
		} else if n := d.tool.CallsFor(p.opKey); exactCalls && n != 1 {
			t.Errorf("action %s/%s: the tool was called %d times with op_key %s, want once", p.taskID, p.actionID, n, p.opKey)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d accepted actions are not on their task as the state plane serves it; e.g. %v", len(missing), len(r.actions), examples(missing))
	}
	if len(stuck) > 0 {
		t.Errorf("%d of %d actions did not end SUCCEEDED: %v; e.g.\n  %s", len(stuck), len(r.actions), byStatus, strings.Join(examples(stuck), "\n  "))
	}

	if dead := d.deadLetters(t); len(dead) > 0 {
		t.Errorf("%d events were set aside on STEWARD_DEADLETTER, want none; e.g.\n  %s", len(dead), strings.Join(examples(dead), "\n  "))
	}
	if broken := verifyChains(t, d, r.tasks, seen); len(broken) > 0 {
		t.Errorf("%d of %d tasks' hash chains do not verify; e.g.\n  %s", len(broken), len(r.tasks), strings.Join(examples(broken), "\n  "))
	}
	return latencies, endings
}

// verifyChains replays each task through the audit service and checks its
// hash chain and credentials here, as `steward audit verify` does; it
// returns what did not verify.
func verifyChains(t *testing.T, d *clusterDeployment, tasks []string, seen map[string]*stewardv1.Task) []string {
	t.Helper()
	var broken []string
	for _, id := range tasks {
		// The replay reads the chain's head from the stream's leader, so it
		// holds every event the projection served.
		events, err := replay(d, id)
		if err == nil && len(events) < int(seen[id].GetEventCount()) {
			err = fmt.Errorf("%d events, the projection served %d", len(events), seen[id].GetEventCount())
		}
		if err != nil {
			broken = append(broken, fmt.Sprintf("%s: replay: %v", id, err))
			continue
		}
		rep := audit.Verify(id, events, audit.WithCredentials(d.trusted))
		switch {
		case !rep.OK():
			broken = append(broken, fmt.Sprintf("%s: event %d (%s): %s", id, rep.Break.Index, rep.Break.EventID, rep.Break.Reason))
		case len(events) < int(seen[id].GetEventCount()):
			broken = append(broken, fmt.Sprintf("%s: replay served %d events, the projection %d", id, len(events), seen[id].GetEventCount()))
		}
	}
	return broken
}

func replay(d *clusterDeployment, taskID string) ([][]byte, error) {
	stream, err := d.state().audit.ReplayTask(context.Background(), connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: taskID}))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var out [][]byte
	for stream.Receive() {
		out = append(out, stream.Msg().Data)
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no events")
	}
	return out, nil
}

// examples returns the first few of items, for a failure message.
func examples(items []string) []string {
	if len(items) > 5 {
		return append(slices.Clone(items[:5]), fmt.Sprintf("… and %d more", len(items)-5))
	}
	return items
}

// percentile returns the p-th percentile of ds (0 < p ≤ 100).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p/100))]
}

// longestGap returns the longest time between consecutive times, and
// when it began.
func longestGap(times []time.Time) (time.Duration, time.Time) {
	s := slices.Clone(times)
	sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
	var gap time.Duration
	var from time.Time
	for i := 1; i < len(s); i++ {
		if g := s[i].Sub(s[i-1]); g > gap {
			gap, from = g, s[i-1]
		}
	}
	return gap, from
}

// longestGapSince is longestGap over the times after since, counting
// since as the first: a pause that begins at since counts in full.
func longestGapSince(times []time.Time, since time.Time) (time.Duration, time.Time) {
	after := []time.Time{since}
	for _, at := range times {
		if at.After(since) {
			after = append(after, at)
		}
	}
	return longestGap(after)
}

// slowAction is the propose→ended time past which the verdict logs an
// action's stages, so that a slow one says where it waited.
const slowAction = 2 * time.Second

// stages gives when each stage of a's way happened, from its proposal.
func stages(a *stewardv1.Action) string {
	at := a.ProposedAt.AsTime()
	var b strings.Builder
	for _, st := range []struct {
		name string
		ts   interface{ AsTime() time.Time }
	}{
		{"evaluated", a.GetSnapshot().GetEvaluatedAt()},
		{"permit issued", a.GetPermit().GetIssuedAt()},
		{"first dispatched", a.GetFirstDispatchedAt()},
		{"finished", a.GetOutcome().GetFinishedAt()},
	} {
		if t := st.ts.AsTime(); !t.IsZero() && t.Unix() > 0 {
			fmt.Fprintf(&b, "%s +%s, ", st.name, t.Sub(at).Round(time.Millisecond))
		}
	}
	fmt.Fprintf(&b, "claimed by %q, attempt %d", a.ClaimedBy, a.GetOutcome().GetAttempt())
	return b.String()
}
