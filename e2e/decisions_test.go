package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestDecisionsEndToEnd runs the decision record against the real binary,
// with tokens: the agent attaches two context items and records two
// decisions, one citing an item that had expired; a repeat of either is
// answered with the one recorded; only the agent records, and only who may
// read the task's content lists its decisions; the reported tokens are
// charged once; GetTask hides the rationale and where the context is from
// a caller who may not read the content; the receipt shows the trail and
// the flag, and /metrics counts it.
func TestDecisionsEndToEnd(t *testing.T) {
	h := startSteward(t, setup{})
	ctx := context.Background()
	taskID := h.create(t, "decisions-e2e", contract())
	now := time.Now()

	fresh := &stewardv1.ContextItem{ContextId: "runbook", Uri: "https://wiki.example/runbook", Digest: "sha256:aa", Source: "wiki",
		FetchedAt: timestamppb.New(now.Add(-time.Minute)), Egress: []string{"openai"}}
	stale := &stewardv1.ContextItem{ContextId: "old-notes", Uri: "s3://kb/notes.md", Digest: "sha256:bb", Source: "kb",
		ExpiresAt: timestamppb.New(now.Add(-time.Hour)), Egress: []string{"*"}}
	attach := func(who authed, item *stewardv1.ContextItem) (*stewardv1.AttachContextResponse, error) {
		resp, err := who.tasks.AttachContext(ctx, connect.NewRequest(&stewardv1.AttachContextRequest{TaskId: taskID, Item: item}))
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}
	if _, err := attach(h.viewer, fresh); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("context attached by someone else than the agent: %v, want permission_denied", err)
	}
	for _, item := range []*stewardv1.ContextItem{fresh, stale} {
		if _, err := attach(h.agent, item); err != nil {
			t.Fatal(err)
		}
	}

	decision := func(id string, cites ...string) *stewardv1.Decision {
		return &stewardv1.Decision{DecisionId: id, ContextIds: cites, Rationale: "the runbook says to page the owner",
			Call:     &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-a", TokensIn: 1000, TokensOut: 200},
			Versions: &stewardv1.VersionSnapshot{PromptTemplateId: "triage", PromptVersion: "3", CodeVersion: "agent@1.0"},
			LedTo:    &stewardv1.Decision_Proposals{Proposals: &stewardv1.DecisionProposals{ProposalIds: []string{"p-" + id}}}}
	}
	record := func(d *stewardv1.Decision) *stewardv1.RecordDecisionResponse {
		t.Helper()
		resp, err := h.agent.tasks.RecordDecision(ctx, connect.NewRequest(&stewardv1.RecordDecisionRequest{TaskId: taskID, Decision: d}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Msg
	}
	first, flagged := decision("d1", "runbook"), decision("d2", "runbook", "old-notes")
	if got := record(first); !got.Created || len(got.Decision.Flags) != 0 {
		t.Fatalf("d1: %v", got)
	}
	got := record(flagged)
	if !got.Created || len(got.Decision.Flags) != 1 || got.Decision.Flags[0].Kind != stewardv1.DecisionFlagKind_DECISION_FLAG_KIND_CONTEXT_EXPIRED {
		t.Fatalf("d2, citing an expired item: %v", got)
	}
	if again := record(first); again.Created || again.Decision.RecordedBy != "agent:summariser" {
		t.Fatalf("d1 again: %v", again)
	}

	list := func(who authed) (*stewardv1.ListDecisionsResponse, error) {
		resp, err := who.query.ListDecisions(ctx, connect.NewRequest(&stewardv1.ListDecisionsRequest{TaskId: taskID}))
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}
	listed, err := list(h.agent)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.Decisions) != 2 || listed.Decisions[1].DecisionId != "d2" || len(listed.ContextItems) != 2 {
		t.Fatalf("ListDecisions: %v", listed)
	}
	if _, err := list(h.viewer); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("ListDecisions by a caller the task does not name: %v, want permission_denied", err)
	}

	// Charged once, in the budget; hidden from a stranger.
	tk := waitServed(t, h.agent.clients, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return len(tk.Decisions) == 2, "decisions not served yet"
	})
	if tk.BudgetUsed.GetTokens() != 2400 {
		t.Fatalf("tokens used %d, want 2,400: two decisions of 1,200, once each", tk.BudgetUsed.GetTokens())
	}
	blind := waitServed(t, h.viewer.clients, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) { return true, "" })
	if d, c := blind.Decisions[0], blind.ContextItems[0]; d.Rationale != "" || c.Uri != "" || d.Call.GetModelId() != "gpt-a" {
		t.Fatalf("a stranger's GetTask shows rationale %q and uri %q (model %q)", d.Rationale, c.Uri, d.Call.GetModelId())
	}

	receipt, err := h.agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Decisions", "`openai/gpt-a` (reported)", "`triage@3`", "**context expired** `old-notes`"} {
		if !strings.Contains(receipt.Msg.Markdown, want) {
			t.Errorf("the receipt does not say %q:\n%s", want, receipt.Msg.Markdown)
		}
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		m := scrape(t, h.url)
		return m[`steward_decisions_flagged{flag="context_expired"}`] == 1, "steward_decisions_flagged not 1"
	})
}
