package backup_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/backup"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/timer"
)

// TestATimerHandledAfterTheCutFiresAgainAfterTheRestore: a timer that
// fires, is handled (its handler appends an event) and is acknowledged
// after the events were taken but before the timers were (Order takes the
// timers last) is in the backup as handled, while what its handler
// appended is not. Taken with its consumer, the restored consumer's ack
// floor is past it and it never fires again (an approval's timeout, a
// retry's wait, lost for good). Taken without consumers, the planes'
// consumers start afresh on the restored stream and hand every fired timer
// still kept to their handlers, which are idempotent.
func TestATimerHandledAfterTheCutFiresAgainAfterTheRestore(t *testing.T) {
	ctx := context.Background()
	nc, js := server(t)
	timers, err := timer.Open(ctx, js, timer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const kind, consumer = "governance.approval", "governance-timers"
	handled := make(chan string, 4)
	handler := func(_ context.Context, f timer.Fired) error { handled <- f.ID; return nil }
	sub, err := timers.Run(ctx, consumer, []string{kind}, handler)
	if err != nil {
		t.Fatal(err)
	}
	// (the events are taken here, before the timer fires)
	if err := timers.Set(ctx, kind, "approval-1", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-handled:
	case <-time.After(10 * time.Second):
		t.Fatal("the timer never fired")
	}
	stream := timers.StreamOf("governance")
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		cons, err := js.Consumer(ctx, stream, consumer)
		if err != nil {
			return false, err.Error()
		}
		ci, err := cons.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		return ci.NumAckPending == 0 && ci.AckFloor.Stream > 0, fmt.Sprintf("ack floor %d, %d pending", ci.AckFloor.Stream, ci.NumAckPending)
	})
	sub.Stop()

	dir := filepath.Join(t.TempDir(), "b")
	if _, err := backup.Take(ctx, nc, []string{stream}, dir, "test", stream); err != nil {
		t.Fatal(err)
	}
	nc2, js2 := server(t)
	if _, err := backup.Restore(ctx, nc2, dir, ""); err != nil {
		t.Fatal(err)
	}
	restored, err := timer.Open(ctx, js2, timer.Config{SoleConsumer: true})
	if err != nil {
		t.Fatal(err)
	}
	sub2, err := restored.Run(ctx, consumer, []string{kind}, handler)
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Stop()
	select {
	case id := <-handled:
		if id != "approval-1" {
			t.Fatalf("fired %q after the restore, want approval-1", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the timer handled after the cut never fired again after the restore: it is lost")
	}
}
