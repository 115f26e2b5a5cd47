package control_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/bucket"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestAForkKeepsWhatItCarriesWhenItsParentIsArchived: a fork carries its
// parent's stored result and artifact. Archiving the parent purges the
// parent's keys (`<parent>.>`, pkg/archive), and the fork, which may live
// on, still reads both: ForkTask copied them under the fork's keys, and
// the fork's fold names those. The TaskCreated keeps the parent's
// references, so the fork's link to its parent still verifies.
func TestAForkKeepsWhatItCarriesWhenItsParentIsArchived(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	req := validRequest("fork-content")
	req.Contract.AllowedTools = []string{"search"}
	parentTask, _, err := r.ctl.CreateTask(ctx, "agent", req)
	if err != nil {
		t.Fatal(err)
	}
	id := parentTask.Contract.TaskId
	r.running(id)
	done := r.propose(t, id, "p-done", "search", "index", map[string]any{"q": "a"})
	result := []byte(`{"rows":"` + strings.Repeat("r", action.MaxInlineRequest) + `"}`)
	r.run(t, id, done.ActionId, succeeded(), result, r.clock.Now())
	if _, _, err := r.ctl.SubmitArtifact(ctx, "agent", &stewardv1.SubmitArtifactRequest{TaskId: id, Name: "report", MediaType: "text/markdown", Content: []byte("# the report")}); err != nil {
		t.Fatal(err)
	}
	forked, _, err := r.ctl.ForkTask(ctx, "agent", &stewardv1.ForkTaskRequest{TaskId: id, Reason: "again", RequestId: "fork-1"})
	if err != nil {
		t.Fatal(err)
	}
	forkID := forked.Contract.TaskId
	for _, b := range []string{action.RequestBucket, action.ResultBucket} {
		s, err := r.JS.Stream(ctx, bucket.StreamName(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(bucket.Subject(b, id+".>"))); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := r.Log.Read(ctx, forkID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := task.Fold(recs)
	if err != nil {
		t.Fatal(err)
	}
	o := f.Actions[0].Outcome
	if got, err := r.Results.Result(ctx, o.Result, o.ResultRef, o.ResultHash); err != nil || !bytes.Equal(got, result) {
		t.Errorf("the fork's carried result at %s after its parent's keys were purged: %v", o.ResultRef, err)
	}
	a := f.Artifacts[0]
	if got, err := r.Results.Get(ctx, a.Uri, a.Sha256); err != nil || string(got) != "# the report" {
		t.Errorf("the fork's carried artifact at %s after its parent's keys were purged: %v", a.Uri, err)
	}
	parent, err := r.Log.ReadRaw(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var datas [][]byte
	var seqs []uint64
	for _, p := range parent {
		datas, seqs = append(datas, p.Data), append(seqs, p.Sequence)
	}
	if err := audit.VerifyFork(audit.Fork(recs[0].Event), datas, seqs); err != nil {
		t.Errorf("the fork's link to its parent: %v", err)
	}
}
