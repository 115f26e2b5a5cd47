package state_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// decisionHistory is a task with two context items and five decisions:
// the first cites an expired item (flagged), the second is Steward's own
// call under a new model and prompt version.
func decisionHistory(t0 time.Time) (items []*stewardv1.ContextItem, decisions []*stewardv1.Decision) {
	items = []*stewardv1.ContextItem{
		{ContextId: "c1", Uri: "https://wiki.example/runbook", Digest: "sha256:aa", Source: "wiki", OwnerRef: "team:ops",
			FetchedAt: timestamppb.New(t0), ExpiresAt: timestamppb.New(t0.Add(time.Hour)), Egress: []string{"openai"},
			Sensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL},
		{ContextId: "c2", Uri: "s3://kb/old.md", Digest: "sha256:bb", Source: "kb", ExpiresAt: timestamppb.New(t0.Add(-time.Hour)), Egress: []string{"*"}},
	}
	confidence := 0.4
	first := &stewardv1.Decision{DecisionId: "d1",
		Call: &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-a", PromptDigest: "sha256:cc", TokensIn: 900, TokensOut: 80,
			Latency: durationpb.New(1200 * time.Millisecond), CostMicros: 31, CallId: "chatcmpl-1", Provenance: stewardv1.Provenance_PROVENANCE_REPORTED},
		Versions: &stewardv1.VersionSnapshot{PromptTemplateId: "triage", PromptVersion: "3", PromptDigest: "sha256:dd", PolicyRevision: "rev-9",
			CodeVersion: "agent@1.4.0", ToolSchemas: []*stewardv1.ToolSchemaRef{{Name: "write", Version: "1", Digest: "sha256:ee"}},
			Provenance: stewardv1.Provenance_PROVENANCE_REPORTED},
		ContextIds: []string{"c1", "c2"}, Confidence: &confidence, Rationale: "the runbook says so", Evidence: []string{"https://wiki.example/runbook#3"},
		DecidedAt: timestamppb.New(t0.Add(time.Minute)),
		LedTo:     &stewardv1.Decision_Proposals{Proposals: &stewardv1.DecisionProposals{ProposalIds: []string{"p1"}}},
		Flags:     []*stewardv1.DecisionFlag{{Kind: stewardv1.DecisionFlagKind_DECISION_FLAG_KIND_CONTEXT_EXPIRED, ContextId: "c2", Detail: "expired"}}}
	second := proto.CloneOf(first)
	second.DecisionId, second.Flags, second.ContextIds = "d2", nil, []string{"c1"}
	second.Call.ModelId, second.Call.Provenance = "gpt-b", stewardv1.Provenance_PROVENANCE_OBSERVED
	second.Versions.PromptVersion = "4"
	second.LedTo = &stewardv1.Decision_PlanVersion{PlanVersion: 1}
	decisions = []*stewardv1.Decision{first, second}
	for _, id := range []string{"d3", "d4", "d5"} {
		d := proto.CloneOf(second)
		d.DecisionId, d.LedTo = id, &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}}
		decisions = append(decisions, d)
	}
	return items, decisions
}

// decisionPayloads is a task that attached decisionHistory's context
// and recorded its decisions.
func decisionPayloads(t0 time.Time) []event.Payload {
	items, decisions := decisionHistory(t0)
	payloads := []event.Payload{&stewardv1.TaskCreated{Contract: contract(1)}, &stewardv1.TaskStarted{}}
	for _, c := range items {
		payloads = append(payloads, &stewardv1.ContextAttached{Item: c})
	}
	for _, d := range decisions {
		payloads = append(payloads, &stewardv1.DecisionRecorded{Decision: d})
	}
	return payloads
}

// TestDecisionsAreListedAndOnTheReceipt: ListDecisions pages a task's
// decisions in order with the context each page cites, every field as
// recorded; the receipt carries the trail, marks the model and prompt
// version changes, says which call Steward observed, shows the flag; and
// steward_decisions_flagged counts it; the model change, which no fallback
// declares, is counted in steward_undeclared_model_swaps_total.
func TestDecisionsAreListedAndOnTheReceipt(t *testing.T) {
	env := stewardtest.NewEnv(t)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	_, decisions := decisionHistory(t0)
	payloads := decisionPayloads(t0)
	head := env.Append("dec", payloads...)
	q, _ := serveState(t, env)
	ctx := context.Background()

	var got []*stewardv1.Decision
	var cited []string
	token := ""
	for pages := 0; ; pages++ {
		resp, err := q.ListDecisions(ctx, connect.NewRequest(&stewardv1.ListDecisionsRequest{TaskId: "dec", PageSize: 2, PageToken: token}))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Msg.Decisions...)
		for _, c := range resp.Msg.ContextItems {
			cited = append(cited, c.ContextId)
		}
		if token = resp.Msg.NextPageToken; token == "" {
			if pages != 2 {
				t.Fatalf("%d pages of 2 for 5 decisions, want 3", pages+1)
			}
			break
		}
	}
	if len(got) != len(decisions) {
		t.Fatalf("listed %d decisions, want %d", len(got), len(decisions))
	}
	for i, d := range got {
		if d.RecordedBy == "" || d.RecordedAt == nil {
			t.Errorf("%s: no recorder or time", d.DecisionId)
		}
		d.RecordedBy, d.RecordedAt = "", nil
		if !proto.Equal(d, decisions[i]) {
			t.Errorf("decision %d listed as\n%v\nrecorded as\n%v", i, d, decisions[i])
		}
	}
	// Page one cites c1 and c2, page two c1, page three c1.
	if strings.Join(cited, ",") != "c1,c2,c1,c1" {
		t.Errorf("pages cite %v", cited)
	}
	if _, err := q.ListDecisions(ctx, connect.NewRequest(&stewardv1.ListDecisionsRequest{TaskId: "dec", PageToken: "bogus"})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("a bogus page token: %v", err)
	}

	r := getReceipt(t, q, "dec")
	if len(r.Receipt.Decisions) != 5 || len(r.Receipt.ContextItems) != 2 {
		t.Fatalf("receipt has %d decisions and %d items", len(r.Receipt.Decisions), len(r.Receipt.ContextItems))
	}
	changes := map[string]string{}
	for _, ch := range r.Receipt.VersionChanges {
		changes[ch.Field] = ch.DecisionId + ":" + ch.From + "→" + ch.To
	}
	if len(changes) != 2 || changes["model"] != "d2:gpt-a→gpt-b" || changes["prompt_version"] != "d2:3→4" {
		t.Errorf("version changes %v, want the model and prompt version at d2", r.Receipt.VersionChanges)
	}
	md := r.Markdown
	t.Logf("\n%s", md)
	for _, want := range []string{"## Decisions", "`openai/gpt-a` (reported)", "`openai/gpt-b` (observed)", "`chatcmpl-1`", "1.2s", "`triage@3`", "`sha256:dd`", "`write@1`",
		"`agent@1.4.0` | reported |", "`rev-9`",
		"900 in, 80 out", "0.4", "proposals `p1`", "plan version 1", "no action", "**context expired** `c2`",
		"**Changed at `d2`:** model `gpt-a` → `gpt-b`", "**Changed at `d2`:** prompt_version `3` → `4`"} {
		if !strings.Contains(md, want) {
			t.Errorf("the receipt does not say %q:\n%s", want, md)
		}
	}
	checkTables(t, md)

	views := follow(t, env.Log)
	if err := views.WaitFor(ctx, head.LastSequence); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP steward_decisions_flagged Model decisions recorded with a flag on the context they cite, by flag (context_expired, context_egress); a decision with two flags counts under each.
# TYPE steward_decisions_flagged gauge
steward_decisions_flagged{flag="context_egress"} 0
steward_decisions_flagged{flag="context_expired"} 1
`
	if err := testutil.CollectAndCompare(state.NewTaskCollector(views), strings.NewReader(want), "steward_decisions_flagged"); err != nil {
		t.Error(err)
	}
	// gpt-a → gpt-b at d2, which no fallback of the contract declares.
	swaps := `
# HELP steward_undeclared_model_swaps_total Model changes between consecutive decisions of a task that no declared fallback covers, in the tasks with a current view.
# TYPE steward_undeclared_model_swaps_total counter
steward_undeclared_model_swaps_total 1
`
	if err := testutil.CollectAndCompare(state.NewTaskCollector(views), strings.NewReader(swaps), "steward_undeclared_model_swaps_total"); err != nil {
		t.Error(err)
	}
}
