package state_test

import (
	"bytes"
	"context"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestExportBundleSaysWhatItWithholds: a sub-task the parent's log names
// (its budget reserved) whose own log holds nothing is not silently left
// out: the export lists it as withheld, with why, so that verify can tell
// a task withheld from a task dropped.
func TestExportBundleSaysWhatItWithholds(t *testing.T) {
	env := stewardtest.NewEnv(t)
	env.Append("root", append(running(), &stewardv1.BudgetConsumed{Tokens: 10, Source: "reserved for delegated task child-1"})...)
	_, audit := serveState(t, env)
	stream, err := audit.ExportBundle(context.Background(), connect.NewRequest(&stewardv1.ExportBundleRequest{TaskId: "root"}))
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	var withheld []*stewardv1.WithheldTask
	for stream.Receive() {
		if bt := stream.Msg().GetTask(); bt != nil {
			tasks = append(tasks, bt.TaskId)
		}
		if w := stream.Msg().GetWithheld(); w != nil {
			withheld = append(withheld, w)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0] != "root" {
		t.Errorf("tasks %v, want root", tasks)
	}
	if len(withheld) != 1 || withheld[0].TaskId != "child-1" || withheld[0].Reason != "the log holds no event of it" {
		t.Errorf("withheld %v, want child-1, whose log holds no event", withheld)
	}
}

// TestExportBundleHoldsStoredArtifacts: the content of an artifact
// Steward stores is in the bundle, with the results: archiving a task
// purges its keys in the results bucket, artifacts' included, so the
// bundle is the one copy left. An artifact kept elsewhere is not.
func TestExportBundleHoldsStoredArtifacts(t *testing.T) {
	env := stewardtest.NewEnv(t)
	doc := []byte("# the report\n")
	env.Append("t1", append(running(), artifactEvent(t, env, "report", 1, doc),
		&stewardv1.ArtifactSubmitted{Artifact: &stewardv1.Artifact{
			Name: "dataset", MediaType: "text/csv", Uri: "s3://bucket/data.csv", Sha256: action.RequestHash([]byte("x")), SizeBytes: 1, Version: 1,
		}})...)
	c := serveContent(t, env, nil)("")
	stream, err := c.audit.ExportBundle(context.Background(), connect.NewRequest(&stewardv1.ExportBundleRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	results := map[string][]byte{}
	for stream.Receive() {
		if r := stream.Msg().GetResult(); r != nil {
			results[r.Hash] = r.Data
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || !bytes.Equal(results[action.RequestHash(doc)], doc) {
		t.Errorf("the bundle's results: %q; want the stored artifact's content alone", results)
	}
}
