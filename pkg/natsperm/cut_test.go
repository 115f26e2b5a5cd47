package natsperm_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/backup"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestOnlyARestoreWritesTheCut: the execution plane reads the cut a
// restore recorded (none before one), and neither it nor any other
// plane can write it: a forged cut could make the plane send again an
// action it must not, or hold back every call.
func TestOnlyARestoreWritesTheCut(t *testing.T) {
	s := startServer(t)
	_, admin := openStores(t, s)
	ctx := context.Background()
	exe := s.connect(t, event.PlaneExecution)
	if cut, err := backup.ReadCut(ctx, exe.js); err != nil || cut != nil {
		t.Fatalf("execution reads cut %v (%v) before any restore, want none", cut, err)
	}
	if _, err := backup.RecordCut(ctx, admin.js, eventlog.DefaultStream); err != nil {
		t.Fatalf("the admin, as steward restore, records the cut: %v", err)
	}
	if cut, err := backup.ReadCut(ctx, exe.js); err != nil || cut == nil {
		t.Fatalf("execution reads cut %v (%v), want the one recorded", cut, err)
	}
	forgers := []*conn{exe}
	for _, plane := range []string{event.PlaneControl, event.PlaneGovernance, event.PlaneState} {
		forgers = append(forgers, s.connect(t, plane))
	}
	const subject = "$KV." + backup.CutBucket + ".cut"
	for _, c := range forgers {
		if err := c.nc.Publish(subject, []byte(`{"sequence":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range forgers {
		stewardtest.Eventually(t, refusedWithin, func() (bool, string) {
			return c.wasRefused(subject), "a plane's write of the cut was not refused"
		})
	}
	if cut, err := backup.ReadCut(ctx, exe.js); err != nil || cut == nil || cut.Sequence == 1 {
		t.Errorf("the cut after the planes tried to write it: %+v (%v)", cut, err)
	}
}
