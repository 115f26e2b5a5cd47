package control_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

func aDecision(id string, contextIDs ...string) *stewardv1.Decision {
	return &stewardv1.Decision{DecisionId: id,
		Call:       &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-a", TokensIn: 100, TokensOut: 20, CostMicros: 7},
		Versions:   &stewardv1.VersionSnapshot{PromptTemplateId: "triage", PromptVersion: "3", CodeVersion: "abc123"},
		ContextIds: contextIDs, Rationale: "the ticket asks for it",
		LedTo: &stewardv1.Decision_Proposals{Proposals: &stewardv1.DecisionProposals{ProposalIds: []string{"p-" + id}}}}
}

func anItem(id string, egress ...string) *stewardv1.ContextItem {
	return &stewardv1.ContextItem{ContextId: id, Uri: "https://wiki.example/" + id, Digest: "sha256:00", Source: "wiki", Egress: egress,
		Sensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL}
}

// TestDecisionsOnTheRecord: a decision and the context it cites are
// recorded once under their ids (a repeat answers the first, another body
// under the same id is refused), a reported call's usage is charged to
// the budget once, each item names the decisions that cited it, and
// citing an item that had expired or may not go to the model's provider
// is recorded and flagged, never refused.
func TestDecisionsOnTheRecord(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "decisions", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	now := r.clock.Now()

	fresh := anItem("c-fresh", "openai")
	stale := anItem("c-stale", task.AnyProvider)
	stale.ExpiresAt = timestamppb.New(now.Add(-time.Hour))
	local := anItem("c-local", "on-prem")
	for _, item := range []*stewardv1.ContextItem{fresh, stale, local} {
		for i := range 2 {
			got, created, err := r.ctl.AttachContext(ctx, "agent", &stewardv1.AttachContextRequest{TaskId: id, Item: item})
			if err != nil || created != (i == 0) || got.AttachedBy != "agent" || got.AttachedAt == nil {
				t.Fatalf("attach %s (try %d): %v, created %v, %v", item.ContextId, i, got, created, err)
			}
		}
	}
	other := proto.CloneOf(fresh)
	other.Digest = "sha256:11"
	if _, _, err := r.ctl.AttachContext(ctx, "agent", &stewardv1.AttachContextRequest{TaskId: id, Item: other}); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("another item under c-fresh: %v, want AlreadyExists", err)
	}

	clean, flagged := aDecision("d1", "c-fresh"), aDecision("d2", "c-fresh", "c-stale", "c-local")
	for _, d := range []*stewardv1.Decision{clean, flagged} {
		for i := range 2 {
			got, created, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: d})
			if err != nil || created != (i == 0) || got.RecordedBy != "agent" || got.Call.Provenance != stewardv1.Provenance_PROVENANCE_REPORTED {
				t.Fatalf("record %s (try %d): %v, created %v, %v", d.DecisionId, i, got, created, err)
			}
		}
	}
	changed := proto.CloneOf(clean)
	changed.Call.ModelId = "gpt-b"
	if _, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: changed}); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("another decision under d1: %v, want AlreadyExists", err)
	}

	tk := r.task(t, id)
	if n := len(tk.Decisions); n != 2 || len(tk.ContextItems) != 3 {
		t.Fatalf("task holds %d decisions and %d items, want 2 and 3", n, len(tk.ContextItems))
	}
	if got := tk.Decisions[0].Flags; len(got) != 0 {
		t.Fatalf("d1 cites only fresh context, flagged %v", got)
	}
	kinds := map[string]stewardv1.DecisionFlagKind{}
	for _, f := range tk.Decisions[1].Flags {
		kinds[f.ContextId] = f.Kind
	}
	want := map[string]stewardv1.DecisionFlagKind{
		"c-stale": stewardv1.DecisionFlagKind_DECISION_FLAG_KIND_CONTEXT_EXPIRED,
		"c-local": stewardv1.DecisionFlagKind_DECISION_FLAG_KIND_CONTEXT_EGRESS,
	}
	if len(kinds) != len(want) || kinds["c-stale"] != want["c-stale"] || kinds["c-local"] != want["c-local"] {
		t.Fatalf("d2 flagged %v, want %v", tk.Decisions[1].Flags, want)
	}
	if got := tk.ContextItems[0].CitedBy; len(got) != 2 || got[0] != "d1" || got[1] != "d2" {
		t.Fatalf("c-fresh cited by %v, want [d1 d2]", got)
	}
	// Charged once each, whatever the repeats.
	if u := tk.BudgetUsed; u.GetTokens() != 240 || u.GetCostMicros() != 14 {
		t.Fatalf("budget used %v, want 240 tokens and 14 micros", u)
	}
	if n := r.Count(id, event.TypeDecisionRecorded); n != 2 {
		t.Fatalf("%d decision events, want 2", n)
	}
}

// TestDecisionNamesTheBadField: each field of a decision or a context item
// that is wrong is refused, naming it; a cited id the ledger lacks too.
func TestDecisionNamesTheBadField(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "bad-decisions", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	if _, _, err := r.ctl.AttachContext(ctx, "agent", &stewardv1.AttachContextRequest{TaskId: id, Item: anItem("c1", "openai")}); err != nil {
		t.Fatal(err)
	}
	decision := func(edit func(d *stewardv1.Decision)) func() error {
		return func() error {
			d := aDecision("d", "c1")
			edit(d)
			_, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: d})
			return err
		}
	}
	item := func(edit func(c *stewardv1.ContextItem)) func() error {
		return func() error {
			c := anItem("c2")
			edit(c)
			_, _, err := r.ctl.AttachContext(ctx, "agent", &stewardv1.AttachContextRequest{TaskId: id, Item: c})
			return err
		}
	}
	nan, two := math.NaN(), 2.0
	tests := []struct {
		name  string
		call  func() error
		code  errs.Code
		field string
	}{
		{"no decision id", decision(func(d *stewardv1.Decision) { d.DecisionId = "" }), errs.Invalid, "decision.decision_id"},
		{"no call", decision(func(d *stewardv1.Decision) { d.Call = nil }), errs.Invalid, "decision.call"},
		{"no model", decision(func(d *stewardv1.Decision) { d.Call.ModelId = "" }), errs.Invalid, "decision.call.model_id"},
		{"no provider", decision(func(d *stewardv1.Decision) { d.Call.Provider = "" }), errs.Invalid, "decision.call.provider"},
		{"negative tokens", decision(func(d *stewardv1.Decision) { d.Call.TokensOut = -1 }), errs.Invalid, "decision.call.tokens_out"},
		{"observed, says the agent", decision(func(d *stewardv1.Decision) { d.Call.Provenance = stewardv1.Provenance_PROVENANCE_OBSERVED }), errs.Invalid, "decision.call.provenance"},
		{"a confidence that is not a number", decision(func(d *stewardv1.Decision) { d.Confidence = &nan }), errs.Invalid, "decision.confidence"},
		{"a confidence past 1", decision(func(d *stewardv1.Decision) { d.Confidence = &two }), errs.Invalid, "decision.confidence"},
		{"an unknown context id", decision(func(d *stewardv1.Decision) { d.ContextIds = []string{"c1", "nope"} }), errs.Invalid, "decision.context_ids[1]"},
		{"a context id twice", decision(func(d *stewardv1.Decision) { d.ContextIds = []string{"c1", "c1"} }), errs.Invalid, "decision.context_ids[1]"},
		{"a long rationale", decision(func(d *stewardv1.Decision) { d.Rationale = strings.Repeat("r", control.MaxTextLen+1) }), errs.TooLarge, "decision.rationale"},
		{"nothing it led to", decision(func(d *stewardv1.Decision) { d.LedTo = nil }), errs.Invalid, "decision.led_to"},
		{"no proposals", decision(func(d *stewardv1.Decision) {
			d.LedTo = &stewardv1.Decision_Proposals{Proposals: &stewardv1.DecisionProposals{}}
		}), errs.Invalid, "decision.proposals.proposal_ids"},
		{"plan version 0", decision(func(d *stewardv1.Decision) { d.LedTo = &stewardv1.Decision_PlanVersion{} }), errs.Invalid, "decision.plan_version"},
		{"decided in the future", decision(func(d *stewardv1.Decision) { d.DecidedAt = timestamppb.New(r.clock.Now().Add(time.Hour)) }), errs.Invalid, "decision.decided_at"},
		{"flags set by the agent", decision(func(d *stewardv1.Decision) { d.Flags = []*stewardv1.DecisionFlag{{}} }), errs.Invalid, "decision.flags"},
		{"an unknown milestone", decision(func(d *stewardv1.Decision) { d.MilestoneId = "m9" }), errs.Invalid, "decision.milestone_id"},
		{"no context id", item(func(c *stewardv1.ContextItem) { c.ContextId = "" }), errs.Invalid, "item.context_id"},
		{"no uri", item(func(c *stewardv1.ContextItem) { c.Uri = "" }), errs.Invalid, "item.uri"},
		{"a relative uri", item(func(c *stewardv1.ContextItem) { c.Uri = "notes/today" }), errs.Invalid, "item.uri"},
		{"no digest", item(func(c *stewardv1.ContextItem) { c.Digest = "" }), errs.Invalid, "item.digest"},
		{"a blank egress entry", item(func(c *stewardv1.ContextItem) { c.Egress = []string{"openai", " "} }), errs.Invalid, "item.egress[1]"},
		{"an unknown sensitivity", item(func(c *stewardv1.ContextItem) { c.Sensitivity = 99 }), errs.Invalid, "item.sensitivity"},
		{"expiring before it was fetched", item(func(c *stewardv1.ContextItem) {
			c.FetchedAt, c.ExpiresAt = timestamppb.New(r.clock.Now()), timestamppb.New(r.clock.Now().Add(-time.Minute))
		}), errs.Invalid, "item.expires_at"},
		{"cited by, says the agent", item(func(c *stewardv1.ContextItem) { c.CitedBy = []string{"d"} }), errs.Invalid, "item.cited_by"},
		{"attached by, says the agent", item(func(c *stewardv1.ContextItem) { c.AttachedBy = "me" }), errs.Invalid, "item.attached_by"},
		{"attached when, says the agent", item(func(c *stewardv1.ContextItem) { c.AttachedAt = timestamppb.Now() }), errs.Invalid, "item.attached_at"},
		{"an invalid fetch time", item(func(c *stewardv1.ContextItem) { c.FetchedAt = &timestamppb.Timestamp{Seconds: -1 << 62} }), errs.Invalid, "item.fetched_at"},
		{"a long source", item(func(c *stewardv1.ContextItem) { c.Source = strings.Repeat("s", control.MaxRefLen+1) }), errs.TooLarge, "item.source"},
		{"a long owner", item(func(c *stewardv1.ContextItem) { c.OwnerRef = strings.Repeat("o", control.MaxRefLen+1) }), errs.TooLarge, "item.owner_ref"},
		{"no task", func() error {
			_, _, err := r.ctl.AttachContext(ctx, "agent", &stewardv1.AttachContextRequest{Item: anItem("c3")})
			return err
		}, errs.Invalid, "task_id"},
		{"recorded by, says the agent", decision(func(d *stewardv1.Decision) { d.RecordedBy = "me" }), errs.Invalid, "decision.recorded_by"},
		{"carried, says the agent", decision(func(d *stewardv1.Decision) { d.Carried = true }), errs.Invalid, "decision.carried"},
		{"recorded when, says the agent", decision(func(d *stewardv1.Decision) { d.RecordedAt = timestamppb.Now() }), errs.Invalid, "decision.recorded_at"},
		{"a negative latency", decision(func(d *stewardv1.Decision) { d.Call.Latency = dur(-time.Second) }), errs.Invalid, "decision.call.latency"},
		{"negative tokens in", decision(func(d *stewardv1.Decision) { d.Call.TokensIn = -1 }), errs.Invalid, "decision.call.tokens_in"},
		{"a negative cost", decision(func(d *stewardv1.Decision) { d.Call.CostMicros = -1 }), errs.Invalid, "decision.call.cost_micros"},
		{"a long prompt digest", decision(func(d *stewardv1.Decision) { d.Call.PromptDigest = strings.Repeat("p", control.MaxRefLen+1) }), errs.TooLarge, "decision.call.prompt_digest"},
		{"a long call id", decision(func(d *stewardv1.Decision) { d.Call.CallId = strings.Repeat("c", control.MaxRefLen+1) }), errs.TooLarge, "decision.call.call_id"},
		{"a long code version", decision(func(d *stewardv1.Decision) { d.Versions.CodeVersion = strings.Repeat("v", control.MaxRefLen+1) }), errs.TooLarge, "decision.versions.code_version"},
		{"versions observed, says the agent", decision(func(d *stewardv1.Decision) { d.Versions.Provenance = stewardv1.Provenance_PROVENANCE_OBSERVED }), errs.Invalid, "decision.versions.provenance"},
		{"a tool schema without a name", decision(func(d *stewardv1.Decision) {
			d.Versions.ToolSchemas = []*stewardv1.ToolSchemaRef{{Name: "write"}, {Version: "1"}}
		}), errs.Invalid, "decision.versions.tool_schemas[1].name"},
		{"a blank evidence reference", decision(func(d *stewardv1.Decision) { d.Evidence = []string{""} }), errs.Invalid, "decision.evidence[0]"},
		{"a decision too large as a whole", decision(func(d *stewardv1.Decision) {
			for range control.MaxEvidence {
				d.Evidence = append(d.Evidence, "https://x.example/"+strings.Repeat("e", 2000))
			}
		}), errs.TooLarge, "decision"},
		{"too much evidence", decision(func(d *stewardv1.Decision) { d.Evidence = make([]string, control.MaxEvidence+1) }), errs.TooLarge, "decision.evidence"},
		{"a blank question", decision(func(d *stewardv1.Decision) { d.LedTo = &stewardv1.Decision_Question{Question: " "} }), errs.Invalid, "decision.question"},
		{"no task for a decision", func() error {
			_, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{Decision: aDecision("d")})
			return err
		}, errs.Invalid, "task_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
				t.Fatalf("err = %v, want %s naming %s", err, tt.code, tt.field)
			}
		})
	}
	if n := r.Count(id, event.TypeDecisionRecorded); n != 0 {
		t.Fatalf("%d decisions recorded from bad requests", n)
	}
}

// TestDecisionsCountTowardTheLoopCap: a task's decisions are capped as
// its proposals are; the first past the cap stops the task for input, and
// a person's resume lets it decide as many again.
func TestDecisionsCountTowardTheLoopCap(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "decision-cap", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, &stewardv1.TaskLimits{MaxActions: 2})
	record := func(d string) error {
		_, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: aDecision(d)})
		return err
	}
	for _, d := range []string{"d1", "d2"} {
		if err := record(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := record("d3"); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a decision past the cap: %v, want FailedPrecondition", err)
	}
	tk := r.task(t, id)
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT || tk.OpenInput.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ACTION_CAP {
		t.Fatalf("after the cap: %s (%s)", tk.Status, tk.StatusReason)
	}
	if _, err := r.ctl.ResumeTask(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.ResumeTaskRequest{TaskId: id, Reason: "go on"}); err != nil {
		t.Fatal(err)
	}
	if err := record("d3"); err != nil {
		t.Fatalf("after a resume: %v", err)
	}
}

// TestProposalsAndPlansNameTheirDecision: a proposal and a plan version
// may name the decision that produced them, which must be recorded; the
// action carries it, and so does every action a plan's steps propose. A
// repeat of a proposal naming another decision is refused.
func TestProposalsAndPlansNameTheirDecision(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.planTask(t, "named-decisions", nil)
	if _, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: aDecision("d1")}); err != nil {
		t.Fatal(err)
	}
	propose := func(proposalID, decisionID string) (*stewardv1.Action, error) {
		a, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: proposalID, Tool: "search", Target: "index", DecisionId: decisionID})
		return a, err
	}
	var e *errs.Error
	if _, err := propose("p0", "nope"); !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "decision_id" {
		t.Fatalf("a proposal naming an unrecorded decision: %v, want invalid_argument on decision_id", err)
	}
	a, err := propose("p1", "d1")
	if err != nil || a.DecisionId != "d1" {
		t.Fatalf("a proposal naming d1: %v, %v", a, err)
	}
	if _, err := propose("p1", ""); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("the same proposal without its decision: %v, want already_exists", err)
	}

	bad := twoSteps(1)
	bad.DecisionId = "nope"
	if _, _, err := r.submitPlan(id, "plan-bad", bad); !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "plan.decision_id" {
		t.Fatalf("a plan naming an unrecorded decision: %v, want invalid_argument on plan.decision_id", err)
	}
	p := twoSteps(1)
	p.DecisionId = "d1"
	r.runPlan(t, id, p)
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Actions) == 2 })
	if got := tk.Actions[1]; got.PlanStepId != "find" || got.DecisionId != "d1" {
		t.Fatalf("the plan step's action: step %q, decision %q, want find and d1", got.PlanStepId, got.DecisionId)
	}
}
