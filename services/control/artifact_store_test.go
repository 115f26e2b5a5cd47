package control_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestArtifactInTheStoreIsTheTasksOwn: an artifact submitted by a uri
// into Steward's store must name content the task holds already — one of
// its artifacts or one of its actions' stored results. Content of another
// task (of another tenant, or one whose content the caller may not read)
// is refused, the same way whether or not the store holds it, and nothing
// is appended: the store is shared and keyed by hash, and a hash is shown
// to anyone who may see a task (GetTask, receipts), so naming one must not
// turn into a copy that GetArtifactContent then serves.
func TestArtifactInTheStoreIsTheTasksOwn(t *testing.T) {
	r := newHarness(t)
	victim := r.acceptanceTask(t, "victim", nil)
	private := r.submit(t, victim, &stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/plain", Content: []byte("the victim's private report")})

	thief := r.acceptanceTask(t, "thief", nil)
	before := r.task(t, thief).EventCount
	for name, req := range map[string]*stewardv1.SubmitArtifactRequest{
		"another task's artifact":         {Uri: private.Uri, Sha256: private.Sha256, SizeBytes: private.SizeBytes},
		"another task's, wrong size":      {Uri: private.Uri, Sha256: private.Sha256, SizeBytes: 1},
		"content the store does not hold": {Uri: "kv://STEWARD_RESULTS/" + emptySHA, Sha256: emptySHA, SizeBytes: 0},
	} {
		t.Run(name, func(t *testing.T) {
			req.TaskId, req.Name, req.MediaType = thief, "copy", "text/plain"
			_, _, err := r.ctl.SubmitArtifact(context.Background(), "agent", req)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "uri" {
				t.Fatalf("err = %v, want invalid naming uri", err)
			}
			if bytes.Contains([]byte(e.Message), []byte("bytes")) {
				t.Errorf("the refusal %q tells the size of content elsewhere", e.Message)
			}
		})
	}
	if n := r.task(t, thief).EventCount; n != before {
		t.Errorf("refused requests appended %d events", n-before)
	}

	// The task's own content may be named: an artifact again, under
	// another name, and a tool result kept in the store.
	own := r.submit(t, thief, &stewardv1.SubmitArtifactRequest{Name: "draft", MediaType: "text/plain", Content: []byte("the thief's own draft")})
	r.submit(t, thief, &stewardv1.SubmitArtifactRequest{Name: "final", MediaType: "text/plain", Uri: own.Uri, Sha256: own.Sha256, SizeBytes: own.SizeBytes})
	search := r.propose(t, thief, "p1", "search", "acct:42", map[string]any{"q": "x"})
	r.run(t, thief, search.ActionId, succeeded(), []byte(`"`+string(bytes.Repeat([]byte("r"), 4096))+`"`), time.Now())
	o := task.FindAction(r.task(t, thief), search.ActionId).GetOutcome()
	if o.GetResultRef() == "" {
		t.Fatal("the result was kept inline; want it in the store")
	}
	r.submit(t, thief, &stewardv1.SubmitArtifactRequest{Name: "found", MediaType: "application/json", Uri: o.ResultRef, Sha256: o.ResultHash, SizeBytes: 4098, ActionId: search.ActionId})
}

const emptySHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
