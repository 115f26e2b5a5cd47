package state_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/state"
)

// by returns payload as an event of task taskID that principal recorded.
func by(tb testing.TB, taskID, principal string, payload event.Payload) *stewardv1.Event {
	tb.Helper()
	ev := stewardtest.Event(tb, taskID, payload)
	ev.Actor.Principal = principal
	return ev
}

func artifact(name string, version uint32, content string) *stewardv1.ArtifactSubmitted {
	return &stewardv1.ArtifactSubmitted{Artifact: &stewardv1.Artifact{
		Name: name, MediaType: "text/markdown", Uri: "kv://STEWARD_RESULTS/" + name, Sha256: strings.Repeat("ab", 32),
		SizeBytes: int64(len(content)), Version: version, ActionId: "act-1",
	}}
}

func check(id string, passed bool) *stewardv1.CriterionResult {
	r := &stewardv1.CriterionResult{CriterionId: id, Expression: `artifacts["report"].size > 0`, Passed: passed}
	if !passed {
		r.Detail = "evaluated to false"
	}
	return r
}

// TestReceiptShowsArtifactsAndAcceptance builds the receipt of a task that
// failed its checks once, was returned once by its acceptance owner and
// accepted on the third round, and checks that every round, check,
// artifact version and the credential are on it.
func TestReceiptShowsArtifactsAndAcceptance(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ctx := context.Background()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := contract(1)
	k.TaskId, k.AcceptanceOwnerRef, k.AllowedTools = "acc", "user:owner", []string{"search"}
	k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "has-report", Expression: `artifacts["report"].size > 0`}}
	signed, err := credential.NewSigner(key).Sign(credential.Root(k, "agent:a", time.Now(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	step := func(principal string, p event.Payload) *stewardv1.Event { return by(t, "acc", principal, p) }
	steps := []*stewardv1.Event{step("agent:a", &stewardv1.TaskCreated{Contract: k}), step("steward", &stewardv1.TaskStarted{}),
		step("steward", &stewardv1.CredentialIssued{Credential: signed})}
	for _, p := range act("act-1", "search", "q", "rev-A") {
		steps = append(steps, step("steward", p))
	}
	steps = append(steps,
		step("steward", succeededOutcome("act-1", 1)),
		step("agent:a", artifact("report", 1, "")),
		step("agent:a", &stewardv1.TaskProduced{Round: 1, Checks: []*stewardv1.CriterionResult{check("has-report", false)}, Artifacts: []string{"report@1"}, ReviewRequired: true}),
		step("agent:a", artifact("report", 2, "draft")),
		step("agent:a", &stewardv1.TaskProduced{Round: 2, Checks: []*stewardv1.CriterionResult{check("has-report", true)}, Artifacts: []string{"report@2"}, ReviewRequired: true}),
		step("user:owner", &stewardv1.TaskReturned{Round: 2, Reasons: []string{"cite the sources"}}),
		step("agent:a", artifact("report", 3, "final, with sources")),
		step("agent:a", &stewardv1.TaskProduced{Round: 3, Checks: []*stewardv1.CriterionResult{check("has-report", true)}, Artifacts: []string{"report@3"}, ReviewRequired: true}),
		step("user:owner", &stewardv1.TaskAccepted{Round: 3, Reason: "good"}),
	)
	env.AppendEvents("acc", steps...)
	q, _ := serveState(t, env)
	got := getReceipt(t, q, "acc")
	r := got.Receipt

	if r.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED || r.Partial {
		t.Fatalf("status %v partial %v, want accepted and whole", r.Status, r.Partial)
	}
	if len(r.Artifacts) != 3 || r.Artifacts[2].Version != 3 || r.Artifacts[2].Size != int64(len("final, with sources")) || r.Artifacts[0].ActionId != "act-1" || r.Artifacts[1].Hash == "" {
		t.Errorf("artifacts: %v", r.Artifacts)
	}
	want := []struct {
		decision stewardv1.AcceptanceDecision
		by       string
	}{
		{stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED, ""},
		{stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_RETURNED, "user:owner"},
		{stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED, "user:owner"},
	}
	if len(r.AcceptanceRounds) != len(want) {
		t.Fatalf("rounds: %v", r.AcceptanceRounds)
	}
	for i, w := range want {
		if got := r.AcceptanceRounds[i]; got.Round != uint32(i+1) || got.Decision != w.decision || got.DecidedBy != w.by || got.ProducedBy != "agent:a" {
			t.Errorf("round %d: %v, want %v by %q", i+1, got, w.decision, w.by)
		}
	}
	if len(r.AcceptanceChecks) != 3 || r.AcceptanceChecks[0].Passed || r.AcceptanceChecks[0].Round != 1 || !r.AcceptanceChecks[2].Passed || r.AcceptanceChecks[2].Round != 3 {
		t.Errorf("checks: %v", r.AcceptanceChecks)
	}
	if c := r.Credential; c == nil || c.CredentialId != credential.ID("acc", "") || c.Principal != "agent:a" || c.KeyId == "" || c.Revoked {
		t.Errorf("credential: %v", c)
	}

	md := got.Markdown
	for _, want := range []string{
		"| `report` | 3 | `text/markdown` | 19 |",
		"### Round 1 — checks failed",
		"### Round 2 — returned for revision",
		"Decided by user:owner at ",
		": cite the sources.",
		"### Round 3 — accepted",
		"| `has-report` | `artifacts[\"report\"].size > 0` | failed | evaluated to false |",
		"- **Credential:** `" + credential.ID("acc", "") + "` for agent:a, signed with key `",
		"**accepted** (accepted)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown does not say %q:\n%s", want, md)
		}
	}
	checkTables(t, md)

	// The receipt is the fold's: the same events give the same receipt.
	recs, err := env.Log.Read(ctx, "acc")
	if err != nil {
		t.Fatal(err)
	}
	folded, err := task.Fold(recs)
	if err != nil || folded.Status != r.Status || len(folded.Acceptance) != len(r.AcceptanceRounds) {
		t.Fatalf("fold: %v, %v", folded.GetStatus(), err)
	}
}

// TestReceiptShowsAClosedApproval: an approval closed by a denial (its
// task's credential was revoked) reads as closed, not open.
func TestReceiptShowsAClosedApproval(t *testing.T) {
	md := state.ReceiptMarkdown(&stewardv1.Receipt{
		TaskId: "t", Calls: []*stewardv1.ReceiptCall{{ActionId: "a1", Status: stewardv1.ActionStatus_ACTION_STATUS_DENIED}},
		Approvals: []*stewardv1.ReceiptApproval{{ApprovalId: "ap1", ActionId: "a1"}},
	})
	if !strings.Contains(md, "closed undecided") || strings.Contains(md, "| open |") {
		t.Errorf("the approval does not read as closed:\n%s", md)
	}
}
