package state_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

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
