package state_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protodelim"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// stubbedSnapshot writes env's varied histories, evicts every ended task
// from a plane's views and has it write a snapshot, then appends a new
// task and an event of an evicted task. It returns what a client reads of
// the tasks once the plane has it all, and the first evicted task.
func stubbedSnapshot(t *testing.T, env *stewardtest.Env, views *state.ViewStore) (map[string]string, string) {
	t.Helper()
	writeMetricsHistories(t, env)
	env.Append("decided", decidedHistory(t)...)
	p, client, c := evictingPlane(t, env, state.Config{Views: views})
	gone := ended(t, client)
	evictAll(t, p, c, gone)
	if _, err := p.SaveSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, err := views.Newest(context.Background())
	if err != nil || m.StubChunks == 0 {
		t.Fatalf("the snapshot has no stubs part: %v, %v", m, err)
	}
	env.Append("later", running()...)
	env.Append(gone[0], &stewardv1.FindingRecorded{Finding: &stewardv1.Finding{FindingId: "late",
		Kind: stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION, Description: "found after the snapshot"}})
	caughtUp(t, env, p.Views())
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return !p.Views().Evicted(gone[0]), "the evicted task that moved is not revived"
	})
	return readings(t, client, p.Views()), gone[0]
}

// heldPlane starts a plane as evictingPlane does, its load of a
// snapshot's stubs held until release.
func heldPlane(t *testing.T, env *stewardtest.Env, views *state.ViewStore) (*state.Plane, func()) {
	t.Helper()
	cfg, _ := evicting(state.Config{Views: views})
	p := state.New(env.Log, env.Logger, cfg)
	release := p.HoldStubs()
	t.Cleanup(release)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, release
}

// TestAPlaneServesBeforeItsStubsAreIn: a plane started from a snapshot
// whose stubs part holds the evicted tasks serves before it has read
// that part: it has folded the log after the snapshot, and a running
// task reads whole. Once the part is in, the list a read asked for while
// it loaded holds every task, and every reading (each task, action,
// decision list and receipt, the list in pages, the metrics) is what the
// plane that wrote the snapshot reads, the evicted task that had an
// event after it (kept by the fold for its stub) included.
func TestAPlaneServesBeforeItsStubsAreIn(t *testing.T) {
	env := stewardtest.NewEnv(t)
	views := openViews(t, env)
	want, moved := stubbedSnapshot(t, env, views)

	p, release := heldPlane(t, env, views)
	client := servePlane(t, env, p)
	got, err := client.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "later"}))
	if err != nil || got.Msg.Task.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("a task created after the snapshot, before the stubs are in: %v, %v", got, err)
	}
	listed := make(chan int)
	go func() { listed <- p.Views().Len("") }()
	release()
	all, err := client.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if n := <-listed; n != len(all.Msg.Tasks) {
		t.Errorf("a list asked for while the stubs loaded has %d tasks, want %d", n, len(all.Msg.Tasks))
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return !p.Views().Evicted(moved), "the evicted task that moved is not revived"
	})
	sameReadings(t, want, readings(t, client, p.Views()))
	task, err := client.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: moved}))
	if err != nil || len(task.Msg.Task.Findings) == 0 {
		t.Fatalf("the evicted task's finding after the snapshot is not in its view: %v, %v", task, err)
	}
	sameRefusals(t, env, p)
}

// TestRefusedStubsAreFoldedFromTheLog: a snapshot whose stubs part the
// log does not bear out (each stub's chain head spoiled) is not trusted:
// the plane serves from the snapshot's first part, folds the tasks the
// stubs would have held from the log instead, and reads as the plane
// that wrote the snapshot.
func TestRefusedStubsAreFoldedFromTheLog(t *testing.T) {
	env := stewardtest.NewEnv(t)
	views := openViews(t, env)
	want, m := spoiledStubs(t, env, views)
	p, release := heldPlane(t, env, views)
	release()
	if p.SnapshotCovered() != m.CoveredSequence {
		t.Fatalf("the plane started from %d, want the snapshot covering %d", p.SnapshotCovered(), m.CoveredSequence)
	}
	sameReadings(t, want, readings(t, servePlane(t, env, p), p.Views()))
	sameRefusals(t, env, p)
}

// TestAFailedFoldOfTheStubsIsTriedAgain: when the fold of the log that
// stands in for a refused stubs part fails (a read of the log), the
// plane folds again rather than serve without the ended tasks, their
// events since the snapshot refused: it reads as the plane that wrote it.
func TestAFailedFoldOfTheStubsIsTriedAgain(t *testing.T) {
	env := stewardtest.NewEnv(t)
	views := openViews(t, env)
	want, _ := spoiledStubs(t, env, views)
	cfg, _ := evicting(state.Config{Views: views})
	p := state.New(env.Log, env.Logger, cfg)
	p.FailFolds(1)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	sameReadings(t, want, readings(t, servePlane(t, env, p), p.Views()))
	sameRefusals(t, env, p)
}

// spoiledStubs is stubbedSnapshot with a snapshot of the same sequence
// put over it whose stubs' chain heads the log does not bear out; it
// returns the readings and that snapshot's manifest.
func spoiledStubs(t *testing.T, env *stewardtest.Env, views *state.ViewStore) (map[string]string, *stewardv1.ViewsSnapshotManifest) {
	t.Helper()
	ctx := context.Background()
	want, _ := stubbedSnapshot(t, env, views)
	m, err := views.Newest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hot, err := io.ReadAll(views.Open(ctx, m))
	if err != nil {
		t.Fatal(err)
	}
	stubs, err := state.ReadStubs(views.OpenStubs(ctx, m))
	if err != nil || len(stubs) == 0 {
		t.Fatalf("the stubs: %d, %v", len(stubs), err)
	}
	var spoiled bytes.Buffer
	for _, e := range stubs {
		e.Task.LastHash = bytes.Repeat([]byte{7}, len(e.Task.LastHash))
		if _, err := protodelim.MarshalTo(&spoiled, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := views.Put(ctx, m.CoveredSequence, m.WrittenAt.AsTime().Add(1), func(h, s io.Writer) error {
		if _, err := h.Write(hot); err != nil {
			return err
		}
		_, err := s.Write(spoiled.Bytes())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return want, m
}

// sameRefusals fails t unless p counts the events refused that a fold of
// the whole log does.
func sameRefusals(t *testing.T, env *stewardtest.Env, p *state.Plane) {
	t.Helper()
	whole := follow(t, env.Log)
	caughtUp(t, env, whole)
	caughtUp(t, env, p.Views())
	if got, want := p.Views().Rejected(), whole.Rejected(); got != want || want == 0 {
		t.Errorf("%d events refused, want %d (of the broken task)", got, want)
	}
}
