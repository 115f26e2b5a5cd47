package e2e_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/audit"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// corpusOutEnv names the directory into which a run of the e2e tests
// writes the histories of their tasks: the history corpus every later
// build must fold to the same views (scripts/corpus, docs/compatibility.md).
// Unset, nothing is written.
const corpusOutEnv = "STEWARD_CORPUS_OUT"

// corpusView is what a build showed of one history when it wrote it: the
// task as GetTask served it and VerifyTask's verdict, both as protojson,
// and the stream sequence each event was stored at (the fold records the
// last; an export file does not carry them).
type corpusView struct {
	TaskID    string          `json:"task_id"`
	Sequences []uint64        `json:"sequences"`
	Task      json.RawMessage `json:"task"`
	Verify    json.RawMessage `json:"verify"`
}

// recordCorpus, when corpusOutEnv is set, writes the history of every task
// h's binary holds when the test ends, before the binary stops. Only the
// binary's tasks are recorded: a harness in this process runs this
// build's code, not the build being recorded.
func recordCorpus(tb testing.TB, h *harness) {
	dir := os.Getenv(corpusOutEnv)
	if dir == "" || h.proc == nil {
		return
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			return // a history the test did not finish is not a scenario
		}
		if err := writeCorpus(dir, tb.Name(), withToken(h.url, adminToken).clients); err != nil {
			tb.Errorf("corpus: %v", err)
		}
	})
}

func writeCorpus(dir, test string, c clients) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := c.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{PageSize: 1000}))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := strings.NewReplacer("/", "-", " ", "_").Replace(test)
	for i, t := range list.Msg.Tasks {
		base := filepath.Join(dir, fmt.Sprintf("%s-%02d", name, i))
		if err := writeHistory(ctx, c, t.GetContract().GetTaskId(), base); err != nil {
			return err
		}
	}
	return nil
}

// writeHistory writes one task's stored events (base.events.gz, the
// export file format, gzipped) and its views (base.json).
func writeHistory(ctx context.Context, c clients, taskID, base string) error {
	stream, err := c.audit.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: taskID}))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	view := corpusView{TaskID: taskID}
	for stream.Receive() {
		view.Sequences = append(view.Sequences, stream.Msg().Record.GetSequence())
		if err := audit.WriteEvent(zw, stream.Msg().Data); err != nil {
			return err
		}
	}
	if err := stream.Err(); err != nil {
		return fmt.Errorf("replay %s: %w", taskID, err)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	got, err := c.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil {
		return err
	}
	verdict, err := c.audit.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: taskID}))
	if err != nil {
		return err
	}
	if view.Task, err = protojson.Marshal(got.Msg.Task); err != nil {
		return err
	}
	if view.Verify, err = protojson.Marshal(verdict.Msg); err != nil {
		return err
	}
	js, err := json.MarshalIndent(view, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".events.gz", buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(base+".json", append(js, '\n'), 0o644)
}
