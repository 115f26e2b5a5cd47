package state_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/archive"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestAnArchivedTasksContentIsNotFound, as docs/archives.md says: once an
// archive run has purged a task's events and content, GetAction,
// GetResult (inline or stored) and GetArtifactContent answer not_found,
// even while the views still hold the task (before the evictor's look
// drops it): they check the log first. Its content is in the bundle; and
// a read of the purged content is never taken for corrupt.
func TestAnArchivedTasksContentIsNotFound(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	h := running()
	h = append(h, act("inline", "lookup", "crm", "r1")...)
	h = append(h, resultOutcome(t, env, "inline", []byte(`{"n":1}`)))
	h = append(h, act("stored", "lookup", "crm", "r1")...)
	h = append(h, resultOutcome(t, env, "stored", bigResult(t)), artifactEvent(t, env, "report", 1, []byte("# the report")))
	env.Append("t1", h...)
	store, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	arch := archive.New(store)
	// The evictor never looks: the task stays in the views.
	_, client := serveQuery(t, env, state.Config{Results: env.Results, Archive: arch, StallCheckEvery: 1000 * time.Hour})
	if _, err := client.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "stored"})); err != nil {
		t.Fatalf("GetResult before archiving: %v", err)
	}
	archiveAndPurge(t, env, arch, "t1")
	if _, err := archive.NewPurger(env.JS).PurgeContent(ctx, []string{"t1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "stored"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("GetResult of an archived task's stored result: %v, want not_found", err)
	}
	if _, _, _, err := readArtifact(ctx, client, &stewardv1.GetArtifactContentRequest{TaskId: "t1", Name: "report"}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("GetArtifactContent of an archived task's stored artifact: %v, want not_found", err)
	}
	if _, err := client.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "inline"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("GetResult of an archived task's inline result: %v, want not_found", err)
	}
	if _, err := client.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: "t1", ActionId: "inline"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("GetAction of an archived task: %v, want not_found", err)
	}
}
