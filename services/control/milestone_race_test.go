package control_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/services/control"
)

// TestRacingReportsAreEachRecorded: two replicas (each its own fold of
// the task) take different reports on one milestone at once; every report
// answered as recorded is on the log. Reports built at the same head must
// not share an event id, or the loser of the append is told that the
// winner's event was its own and its report is lost.
func TestRacingReportsAreEachRecorded(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.phasedTask(t, "racing-reports")
	cfg := r.config()
	cfg.Tasks = taskstore.New(r.Log)
	other := control.New(r.Log, r.Logger, cfg)
	t.Cleanup(other.Stop)
	recorded := map[string]bool{}
	var mu sync.Mutex
	for round := range 15 {
		var wg sync.WaitGroup
		for i, p := range []*control.Plane{r.ctl, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				note := fmt.Sprintf("round %d, replica %d", round, i)
				resp, err := p.ReportProgress(ctx, "agent", &stewardv1.ReportProgressRequest{TaskId: id, MilestoneId: "collect", Percent: 10, Note: note})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				recorded[note] = resp.Recorded
			}()
		}
		wg.Wait()
	}
	recs, err := r.Log.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	onLog := map[string]bool{}
	for _, rec := range recs {
		if p := rec.Event.GetMilestoneProgressed(); p != nil {
			onLog[p.Note] = true
		}
	}
	for note, ok := range recorded {
		if ok && !onLog[note] {
			t.Errorf("report %q answered recorded, but it is not on the log", note)
		}
	}
}
