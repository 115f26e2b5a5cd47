package control_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

const (
	owner     = "user:rev"
	requester = "user:a" // validRequest's
)

// TestArtifactRequestsNameTheBadField: a malformed SubmitArtifact is
// refused naming the field, and appends nothing.
func TestArtifactRequestsNameTheBadField(t *testing.T) {
	r := newHarness(t)
	id := r.acceptanceTask(t, "fields", nil)
	search := r.propose(t, id, "p1", "search", "acct:42", map[string]any{"q": "x"})
	hash := strings.Repeat("0a", 32)
	tests := []struct {
		name  string
		req   *stewardv1.SubmitArtifactRequest
		code  errs.Code
		field string
	}{
		{"no name", &stewardv1.SubmitArtifactRequest{MediaType: "text/plain", Content: []byte("x")}, errs.Invalid, "name"},
		{"name with a version", &stewardv1.SubmitArtifactRequest{Name: "report@2", MediaType: "text/plain", Content: []byte("x")}, errs.Invalid, "name"},
		{"long name", &stewardv1.SubmitArtifactRequest{Name: strings.Repeat("n", control.MaxRefLen+1), MediaType: "text/plain", Content: []byte("x")}, errs.TooLarge, "name"},
		{"no media type", &stewardv1.SubmitArtifactRequest{Name: "r", Content: []byte("x")}, errs.Invalid, "media_type"},
		{"not a media type", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "markdown", Content: []byte("x")}, errs.Invalid, "media_type"},
		{"no content", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain"}, errs.Invalid, "content"},
		{"content and uri", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Content: []byte("x"), Uri: "s3://b/k"}, errs.Invalid, "uri"},
		{"wrong hash of content", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Content: []byte("x"), Sha256: hash}, errs.Invalid, "sha256"},
		{"wrong size of content", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Content: []byte("x"), SizeBytes: 2}, errs.Invalid, "size_bytes"},
		{"uri without hash", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Uri: "s3://b/k", SizeBytes: 1}, errs.Invalid, "sha256"},
		{"uri with a bad hash", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Uri: "s3://b/k", Sha256: strings.ToUpper(hash), SizeBytes: 1}, errs.Invalid, "sha256"},
		{"uri without size", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Uri: "s3://b/k", Sha256: hash}, errs.Invalid, "size_bytes"},
		{"negative size", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Uri: "s3://b/k", Sha256: hash, SizeBytes: -1}, errs.Invalid, "size_bytes"},
		{"relative uri", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Uri: "report.md", Sha256: hash, SizeBytes: 1}, errs.Invalid, "uri"},
		{"uri into the store, wrong hash", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Uri: "kv://STEWARD_RESULTS/" + hash, Sha256: hash, SizeBytes: 1}, errs.Invalid, "uri"},
		{"action not succeeded", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Content: []byte("x"), ActionId: search.ActionId}, errs.Invalid, "action_id"},
		{"no task id", &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Content: []byte("x")}, errs.Invalid, "task_id"},
	}
	before := r.task(t, id).EventCount
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.field != "task_id" {
				tt.req.TaskId = id
			}
			_, _, err := r.ctl.SubmitArtifact(context.Background(), "agent", tt.req)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
				t.Fatalf("err = %v, want %s naming %s", err, tt.code, tt.field)
			}
		})
	}
	if n := r.task(t, id).EventCount; n != before {
		t.Errorf("refused requests appended %d events", n-before)
	}
}

// TestOversizedArtifactIsTooLarge: content past the inline limit is
// TooLarge on content, saying the limit and how to send it instead;
// referenced content past its limit is TooLarge on size_bytes. Neither
// appends anything. The limits are the plane's options.
func TestOversizedArtifactIsTooLarge(t *testing.T) {
	r := newHarness(t)
	id := r.acceptanceTask(t, "large", nil)
	cfg := r.config()
	cfg.MaxInlineArtifact, cfg.MaxReferencedArtifact = 1024, 1<<20
	small := control.New(r.Log, r.Logger, cfg)
	hash := strings.Repeat("0a", 32)
	tests := []struct {
		name    string
		plane   *control.Plane
		req     *stewardv1.SubmitArtifactRequest
		field   string
		message string
	}{
		{"inline, default limit", r.ctl, &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Content: bytes.Repeat([]byte("x"), control.DefaultMaxInlineArtifact+1)},
			"content", "the limit is 512 KiB for content sent inline: store it elsewhere and submit it by reference"},
		{"inline, plane's limit", small, &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Content: bytes.Repeat([]byte("x"), 1025)},
			"content", "is 1025 bytes; the limit is 1 KiB"},
		{"by reference, default limit", r.ctl, &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Uri: "s3://b/k", Sha256: hash, SizeBytes: control.DefaultMaxReferencedArtifact + 1},
			"size_bytes", "the limit is 5 GiB"},
		{"by reference, plane's limit", small, &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Uri: "s3://b/k", Sha256: hash, SizeBytes: 2 << 20},
			"size_bytes", "is 2 MiB; the limit is 1 MiB"},
	}
	before := r.task(t, id).EventCount
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.TaskId = id
			_, _, err := tt.plane.SubmitArtifact(context.Background(), "agent", tt.req)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.TooLarge || e.Field != tt.field || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("err = %v, want too large naming %s and saying %q", err, tt.field, tt.message)
			}
		})
	}
	if n := r.task(t, id).EventCount; n != before {
		t.Errorf("oversized artifacts appended %d events", n-before)
	}
	// At the limit is fine.
	a := r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "r", MediaType: "text/plain", Content: bytes.Repeat([]byte("x"), control.DefaultMaxInlineArtifact)})
	if a.SizeBytes != control.DefaultMaxInlineArtifact || !strings.HasPrefix(a.Uri, "kv://STEWARD_RESULTS/") {
		t.Errorf("artifact at the limit: %v", a)
	}
}

// TestArtifactVersions: each name counts its own versions; a request id
// makes a submission safe to retry, and naming other content with it is
// AlreadyExists.
func TestArtifactVersions(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.acceptanceTask(t, "versions", nil)
	steps := []struct {
		req  *stewardv1.SubmitArtifactRequest
		want string
	}{
		{&stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/markdown", Content: []byte("v1"), RequestId: "s1"}, "report@1"},
		{&stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/markdown", Content: []byte("v1"), RequestId: "s1"}, "report@1"},
		{&stewardv1.SubmitArtifactRequest{Name: "data", MediaType: "application/json", Content: []byte("{}")}, "data@1"},
		{&stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/markdown", Content: []byte("v2"), RequestId: "s2"}, "report@2"},
		{&stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/markdown", Content: []byte("v1"), RequestId: "s1"}, "report@1"},
		// The same content again is a new version: a resubmission says so.
		{&stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/markdown", Content: []byte("v2")}, "report@3"},
	}
	for i, s := range steps {
		s.req.TaskId = id
		a, tk, err := r.ctl.SubmitArtifact(ctx, "agent", s.req)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if task.ArtifactRef(a) != s.want || a.SubmittedBy != "agent" || a.SubmittedAt == nil || a.Sha256 != sha256hex(s.req.Content) || a.SizeBytes != int64(len(s.req.Content)) {
			t.Fatalf("step %d: got %v, want %s", i, a, s.want)
		}
		if task.FindArtifact(tk, s.want) == nil {
			t.Fatalf("step %d: the task returned has no %s", i, s.want)
		}
	}
	tk := r.task(t, id)
	if len(tk.Artifacts) != 4 {
		t.Errorf("%d artifacts recorded, want 4", len(tk.Artifacts))
	}
	for _, other := range []*stewardv1.SubmitArtifactRequest{
		{Name: "report", MediaType: "text/markdown", Content: []byte("other")},
		{Name: "report", MediaType: "text/plain", Content: []byte("v1")},
	} {
		other.TaskId, other.RequestId = id, "s1"
		if _, _, err := r.ctl.SubmitArtifact(ctx, "agent", other); !errs.Is(err, errs.AlreadyExists) {
			t.Errorf("request id reused for %s %q: %v, want already exists", other.MediaType, other.Content, err)
		}
	}
}

// TestFailedChecksAreNotAccepted: a round whose checks fail sends the task
// back to running; it is not accepted and the acceptance owner is not
// asked. A revision that passes waits for the owner.
func TestFailedChecksAreNotAccepted(t *testing.T) {
	r := newHarness(t)
	id := r.acceptanceTask(t, "failing", func(c *stewardv1.TaskContract) {
		c.AcceptanceOwnerRef = owner
		c.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "count", Expression: `artifacts.summary.json.count == 3`}}
	})
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "summary", MediaType: "application/json", Content: []byte(`{"count": 2}`)})
	tk, round := r.produce(t, id, "")
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || round.Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED ||
		round.Checks[0].Passed || !strings.Contains(tk.StatusReason, "count") {
		t.Fatalf("after failing checks: %s (%s), round %v", tk.Status, tk.StatusReason, round)
	}
	if _, err := r.ctl.AcceptTask(context.Background(), owner, &stewardv1.AcceptTaskRequest{TaskId: id}); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("accepting a task whose checks failed: %v, want failed precondition", err)
	}
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "summary", MediaType: "application/json", Content: []byte(`{"count": 3}`)})
	tk, round = r.produce(t, id, "")
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_PRODUCED || round.Round != 2 || round.Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_PENDING ||
		round.Artifacts[0] != "summary@2" {
		t.Fatalf("after passing checks: %s, round %v", tk.Status, round)
	}
}

// TestOwnerReturnsThenAccepts: the acceptance owner returns the first
// round with reasons, and accepts the revision; both rounds are kept.
func TestOwnerReturnsThenAccepts(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.acceptanceTask(t, "review", func(c *stewardv1.TaskContract) {
		c.AcceptanceOwnerRef = owner
		c.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{
			{Id: "report", Expression: `"report" in artifacts && artifacts.report.size > 0`},
			{Id: "tone", Description: "reads well", RequiresReviewer: true},
		}
	})
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/markdown", Content: []byte("draft")})
	r.produce(t, id, "")
	for range 2 { // the second is a retry
		tk, err := r.ctl.ReturnTask(ctx, owner, &stewardv1.ReturnTaskRequest{TaskId: id, Reasons: []string{"too short"}, RequestId: "ret-1", Round: 1})
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || !strings.Contains(tk.StatusReason, "too short") {
			t.Fatalf("after return: %s (%s)", tk.Status, tk.StatusReason)
		}
	}
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/markdown", Content: []byte("a longer report")})
	r.produce(t, id, "")
	// A decision naming the round the owner looked at reaches no other:
	// round 1 was decided, round 2 is new.
	if _, err := r.ctl.AcceptTask(ctx, owner, &stewardv1.AcceptTaskRequest{TaskId: id, Round: 1}); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("accepting round 1 while round 2 is up: %v", err)
	}
	// The return's retry is still answered, though round 2 is up.
	if _, err := r.ctl.ReturnTask(ctx, owner, &stewardv1.ReturnTaskRequest{TaskId: id, Reasons: []string{"too short"}, RequestId: "ret-1", Round: 1}); err != nil {
		t.Fatalf("a retried return of round 1: %v", err)
	}
	tk, err := r.ctl.AcceptTask(ctx, owner, &stewardv1.AcceptTaskRequest{TaskId: id, Reason: "good", Round: 2})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED {
		t.Fatalf("after accept: %s", tk.Status)
	}
	want := []struct {
		decision  stewardv1.AcceptanceDecision
		artifacts string
		reason    string
	}{
		{stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_RETURNED, "report@1", "too short"},
		{stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED, "report@2", "good"},
	}
	if len(tk.Acceptance) != len(want) {
		t.Fatalf("%d rounds, want %d", len(tk.Acceptance), len(want))
	}
	for i, w := range want {
		got := tk.Acceptance[i]
		if got.Round != uint32(i+1) || got.Decision != w.decision || got.DecidedBy != owner || got.DecidedAt == nil ||
			strings.Join(got.Artifacts, ",") != w.artifacts || strings.Join(got.Reasons, ",") != w.reason || len(got.Checks) != 2 {
			t.Errorf("round %d: %v", i+1, got)
		}
	}
}

// TestOnlyTheAcceptanceOwnerDecides: anyone else — the agent, the
// requester under separation of duties — is PermissionDenied, told who
// may, and nothing is appended.
func TestOnlyTheAcceptanceOwnerDecides(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.acceptanceTask(t, "who", func(c *stewardv1.TaskContract) {
		c.AcceptanceOwnerRef, c.SeparationOfDuties = owner, true
	})
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/plain", Content: []byte("done")})
	r.produce(t, id, "")
	before := r.task(t, id).EventCount
	for _, who := range []string{"agent", requester, "anonymous"} {
		for verb, decide := range map[string]func() error{
			"accept": func() error {
				_, err := r.ctl.AcceptTask(ctx, who, &stewardv1.AcceptTaskRequest{TaskId: id})
				return err
			},
			"return": func() error {
				_, err := r.ctl.ReturnTask(ctx, who, &stewardv1.ReturnTaskRequest{TaskId: id, Reasons: []string{"no"}})
				return err
			},
		} {
			if err := decide(); !errs.Is(err, errs.PermissionDenied) || !strings.Contains(err.Error(), owner) {
				t.Errorf("%s by %s: %v, want permission denied naming %s", verb, who, err, owner)
			}
		}
	}
	if n := r.task(t, id).EventCount; n != before {
		t.Errorf("refused decisions appended %d events", n-before)
	}
	if tk, err := r.ctl.AcceptTask(ctx, owner, &stewardv1.AcceptTaskRequest{TaskId: id}); err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED {
		t.Fatalf("accept by the owner: %v", err)
	}
}

// TestNoReviewIsAcceptedByTheCriteria: with no acceptance owner and no
// criterion asking for a reviewer, passing checks accept the task; nobody
// accepts it by hand.
func TestNoReviewIsAcceptedByTheCriteria(t *testing.T) {
	r := newHarness(t)
	id := r.acceptanceTask(t, "auto", func(c *stewardv1.TaskContract) {
		c.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "report", Expression: `artifacts.report.text.contains("done")`}}
	})
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/plain", Content: []byte("all done")})
	tk, round := r.produce(t, id, "")
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED || round.Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED ||
		round.DecidedBy != task.CriteriaAcceptor {
		t.Fatalf("after produce: %s, round %v", tk.Status, round)
	}
	if _, err := r.ctl.AcceptTask(context.Background(), "user:a", &stewardv1.AcceptTaskRequest{TaskId: id}); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("accepting an accepted task: %v, want failed precondition", err)
	}
}

// TestMarkProducedIsSafeToRetry: the same request id returns the same
// round and appends nothing; a second produce without one is refused while
// the first waits for review.
func TestMarkProducedIsSafeToRetry(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.acceptanceTask(t, "retry", func(c *stewardv1.TaskContract) { c.AcceptanceOwnerRef = owner })
	_, first := r.produce(t, id, "m1")
	n := r.task(t, id).EventCount
	tk, again := r.produce(t, id, "m1")
	if again.Round != first.Round || tk.Status != stewardv1.TaskStatus_TASK_STATUS_PRODUCED || r.task(t, id).EventCount != n {
		t.Errorf("retry: round %d (first %d), %s, %d events (was %d)", again.Round, first.Round, tk.Status, r.task(t, id).EventCount, n)
	}
	if _, _, err := r.ctl.MarkProduced(ctx, "agent", &stewardv1.MarkProducedRequest{TaskId: id, RequestId: "m2"}); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("producing a produced task: %v, want failed precondition", err)
	}
	// A request id names one command: reused by its caller for another,
	// it is refused rather than silently doing nothing (see
	// TestRequestIDNamesOneCommand for every command).
	if _, _, err := r.ctl.SubmitArtifact(ctx, "agent", &stewardv1.SubmitArtifactRequest{TaskId: id, Name: "r", MediaType: "text/plain", Content: []byte("x"), RequestId: "m1"}); !errs.Is(err, errs.AlreadyExists) {
		t.Errorf("submit with the produce's request id: %v, want already exists", err)
	}
	if r.task(t, id).EventCount != n {
		t.Errorf("reused request ids appended events")
	}
}

// TestConcurrentProducesMakeOneRound races produces, half of them
// retries of one request: one round is recorded, the retries all return
// it, and the others are refused because the task is produced already.
func TestConcurrentProducesMakeOneRound(t *testing.T) {
	r := newHarness(t)
	id := r.acceptanceTask(t, "race", func(c *stewardv1.TaskContract) { c.AcceptanceOwnerRef = owner })
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/plain", Content: []byte("done")})
	var wg sync.WaitGroup
	failures := make([]error, 8)
	rounds := make([]*stewardv1.AcceptanceRound, 8)
	for i := range 8 {
		wg.Go(func() {
			req := &stewardv1.MarkProducedRequest{TaskId: id}
			if i%2 == 0 {
				req.RequestId = "same"
			}
			_, rounds[i], failures[i] = r.ctl.MarkProduced(context.Background(), "agent", req)
		})
	}
	wg.Wait()
	for i, err := range failures {
		if err != nil && !errs.Is(err, errs.FailedPrecondition) {
			t.Errorf("produce %d: %v", i, err)
		}
		if err == nil && rounds[i].Round != 1 {
			t.Errorf("produce %d: round %d", i, rounds[i].Round)
		}
	}
	tk := r.task(t, id)
	if len(tk.Acceptance) != 1 || tk.Status != stewardv1.TaskStatus_TASK_STATUS_PRODUCED {
		t.Errorf("%d rounds, task %s", len(tk.Acceptance), tk.Status)
	}
}

// TestMarkProducedWaitsForActions: a result cannot be produced while an
// action is under way.
func TestMarkProducedWaitsForActions(t *testing.T) {
	r := newHarness(t)
	id := r.acceptanceTask(t, "busy", nil)
	a := r.propose(t, id, "p1", "search", "acct:42", map[string]any{"q": "x"})
	before := r.task(t, id).EventCount
	_, _, err := r.ctl.MarkProduced(context.Background(), "agent", &stewardv1.MarkProducedRequest{TaskId: id})
	if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), a.ActionId) {
		t.Fatalf("produce with an action under way: %v", err)
	}
	if n := r.task(t, id).EventCount; n != before {
		t.Errorf("a refused produce appended %d events", n-before)
	}
}

// TestDecisionRequestsNameTheBadField checks AcceptTask's and ReturnTask's
// own fields before anything is read.
func TestDecisionRequestsNameTheBadField(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	long := strings.Repeat("r", control.MaxReasonLen+1)
	tests := []struct {
		name  string
		call  func() error
		code  errs.Code
		field string
	}{
		{"return without reasons", func() error {
			_, err := r.ctl.ReturnTask(ctx, owner, &stewardv1.ReturnTaskRequest{TaskId: "t1"})
			return err
		}, errs.Invalid, "reasons"},
		{"return with an empty reason", func() error {
			_, err := r.ctl.ReturnTask(ctx, owner, &stewardv1.ReturnTaskRequest{TaskId: "t1", Reasons: []string{"fine", ""}})
			return err
		}, errs.Invalid, "reasons[1]"},
		{"return with a long reason", func() error {
			_, err := r.ctl.ReturnTask(ctx, owner, &stewardv1.ReturnTaskRequest{TaskId: "t1", Reasons: []string{long}})
			return err
		}, errs.TooLarge, "reasons[0]"},
		{"accept with a long reason", func() error {
			_, err := r.ctl.AcceptTask(ctx, owner, &stewardv1.AcceptTaskRequest{TaskId: "t1", Reason: long})
			return err
		}, errs.TooLarge, "reason"},
		{"accept without a task", func() error {
			_, err := r.ctl.AcceptTask(ctx, owner, &stewardv1.AcceptTaskRequest{})
			return err
		}, errs.Invalid, "task_id"},
		{"produce with a bad task id", func() error {
			_, _, err := r.ctl.MarkProduced(ctx, owner, &stewardv1.MarkProducedRequest{TaskId: "a.b"})
			return err
		}, errs.Invalid, "task_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *errs.Error
			if err := tt.call(); !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
				t.Fatalf("err = %v, want %s naming %s", err, tt.code, tt.field)
			}
		})
	}
}

// acceptanceTask creates a task allowing the harness's tools, with its
// contract changed by edit, and waits until it runs.
func (r *harness) acceptanceTask(t *testing.T, requestID string, edit func(*stewardv1.TaskContract)) string {
	t.Helper()
	req := validRequest(requestID)
	req.Contract.AllowedTools = []string{"write", "undo", "search", "net"}
	if edit != nil {
		edit(req.Contract)
	}
	tk, _, err := r.ctl.CreateTask(context.Background(), requester, req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING })
	return id
}

// submit submits an artifact to taskID as the agent.
func (r *harness) submit(t *testing.T, taskID string, req *stewardv1.SubmitArtifactRequest) *stewardv1.Artifact {
	t.Helper()
	req.TaskId = taskID
	a, _, err := r.ctl.SubmitArtifact(context.Background(), "agent", req)
	if err != nil {
		t.Fatalf("submit %s: %v", req.Name, err)
	}
	return a
}

// produce marks taskID produced as the agent.
func (r *harness) produce(t *testing.T, taskID, requestID string) (*stewardv1.Task, *stewardv1.AcceptanceRound) {
	t.Helper()
	tk, round, err := r.ctl.MarkProduced(context.Background(), "agent", &stewardv1.MarkProducedRequest{TaskId: taskID, RequestId: requestID})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	if last := tk.Acceptance[len(tk.Acceptance)-1]; round.Round > last.Round {
		t.Fatalf("round %d is past the task's last, %d", round.Round, last.Round)
	}
	return tk, round
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
