package state_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// historyAt is payloads as task id's sealed history, the i-th event
// recorded at start plus i seconds.
func historyAt(t *testing.T, id string, start time.Time, payloads ...event.Payload) []*stewardv1.EventRecord {
	t.Helper()
	var out []*stewardv1.EventRecord
	var prev []byte
	for i, p := range payloads {
		ev := stewardtest.Event(t, id, p)
		ev.Time = timestamppb.New(start.Add(time.Duration(i) * time.Second))
		if _, err := event.Seal(ev, prev); err != nil {
			t.Fatal(err)
		}
		prev = ev.Hash
		out = append(out, &stewardv1.EventRecord{Sequence: uint64(i + 1), Event: ev})
	}
	return out
}

// inMilestone is act's ledger steps with the action tagged milestone m.
func inMilestone(m string, steps []event.Payload) []event.Payload {
	steps[0].(*stewardv1.ActionProposed).Action.MilestoneId = m
	return steps
}

func reportedDecision(id, milestone string, tokensIn, cost int64) *stewardv1.DecisionRecorded {
	return &stewardv1.DecisionRecorded{Decision: &stewardv1.Decision{DecisionId: id, MilestoneId: milestone,
		Call:  &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-a", TokensIn: tokensIn, TokensOut: 1, CostMicros: cost, Provenance: stewardv1.Provenance_PROVENANCE_REPORTED},
		LedTo: &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}}}}
}

// TestBreakdownAddsUpToTheTotals: spending tagged with milestones and
// not — tool calls, model decisions, usage reported outside any action —
// lands on the milestone it was charged to, the rows (the "no milestone"
// row included) add up to the task's tokens and cost, and so do the step
// rows; the stage that failed most is the milestone with most failures;
// time, retries and people's interventions are counted where they
// happened.
func TestBreakdownAddsUpToTheTotals(t *testing.T) {
	k := contract(1)
	k.Budget = &stewardv1.Budget{MaxTokens: 100000, MaxCostMicros: 100000, Currency: "USD",
		Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "gather"}, {MilestoneId: "write"}}}
	h := []event.Payload{&stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{}}
	// gather: one call, retried once after a transient failure (1 failure).
	h = append(h, inMilestone("gather", act("act-1", "search", "web", "rev-A"))...)
	h = append(h,
		&stewardv1.ActionWaiting{ActionId: "act-1", Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Reason: "503"},
		&stewardv1.ActionDispatched{ActionId: "act-1", Attempt: 2, Worker: "w1"},
		&stewardv1.ActionOutcomeRecorded{ActionId: "act-1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, ResultRef: "r1", ResultHash: "h1", Attempt: 2, Tokens: 100, CostMicros: 50}},
		reportedDecision("d-gather", "gather", 29, 7),
	)
	// write: a call that went unknown and a person settled as failed (2
	// failures, 1 intervention).
	h = append(h, inMilestone("write", act("act-2", "publish", "blog", "rev-A"))...)
	h = append(h,
		&stewardv1.ActionOutcomeRecorded{ActionId: "act-2", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, Reason: "timeout", Attempt: 1, CostMicros: 13}},
		&stewardv1.ActionSettled{ActionId: "act-2", State: stewardv1.SettleState_SETTLE_STATE_FAILED, SettledBy: "user:ops", Reason: "not on the blog"},
		&stewardv1.BudgetConsumed{Tokens: 40, CostMicros: 11, MilestoneId: "write", Source: "model:gpt-a"},
	)
	// Untagged: a failed call, a decision and reported usage (1 failure).
	h = append(h, act("act-3", "search", "web", "rev-A")...)
	h = append(h,
		&stewardv1.ActionOutcomeRecorded{ActionId: "act-3", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC, Reason: "400", Attempt: 1, Tokens: 3, CostMicros: 2}},
		reportedDecision("d-free", "", 19, 3),
		&stewardv1.BudgetConsumed{Tokens: 5, CostMicros: 1, Source: "model:gpt-a"},
	)
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	r, err := state.BuildReceipt(historyAt(t, "bd", start, h...))
	if err != nil {
		t.Fatal(err)
	}
	b := r.Breakdown
	if r.BudgetUsed.Tokens != 100+30+40+3+20+5 || r.BudgetUsed.CostMicros != 50+7+13+11+2+3+1 {
		t.Fatalf("budget used %d tokens, %d micros: the history spends 198 and 87", r.BudgetUsed.Tokens, r.BudgetUsed.CostMicros)
	}
	type want struct {
		kind                             stewardv1.ReceiptCostRowKind
		id                               string
		tokens, cost                     int64
		retries, failures, interventions uint32
	}
	check := func(what string, rows []*stewardv1.ReceiptCostRow, ws []want) {
		t.Helper()
		var tokens, cost int64
		for _, r := range rows {
			tokens, cost = tokens+r.Tokens, cost+r.CostMicros
		}
		if tokens != r.BudgetUsed.Tokens || cost != r.BudgetUsed.CostMicros {
			t.Errorf("%s rows add up to %d tokens and %d micros, the task used %d and %d", what, tokens, cost, r.BudgetUsed.Tokens, r.BudgetUsed.CostMicros)
		}
		if len(rows) != len(ws) {
			t.Fatalf("%s: %d rows, want %d: %v", what, len(rows), len(ws), rows)
		}
		for i, w := range ws {
			g := rows[i]
			if g.Kind != w.kind || g.Id != w.id || g.Tokens != w.tokens || g.CostMicros != w.cost || g.Retries != w.retries || g.Failures != w.failures || g.Interventions != w.interventions {
				t.Errorf("%s row %d = %v, want %+v", what, i, g, w)
			}
		}
	}
	const (
		ms, none = stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_MILESTONE, stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_NO_MILESTONE
		action   = stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_ACTION
		decision = stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_DECISION
		usage    = stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_REPORTED_USAGE
	)
	check("milestone", b.Milestones, []want{
		{ms, "gather", 130, 57, 1, 1, 0},
		{ms, "write", 40, 24, 0, 2, 1},
		{none, "", 28, 6, 0, 1, 0},
	})
	check("step", b.Steps, []want{
		{action, "act-1", 100, 50, 1, 1, 0},
		{decision, "d-gather", 30, 7, 0, 0, 0},
		{action, "act-2", 0, 13, 0, 2, 1},
		{usage, "", 40, 11, 0, 0, 0},
		{action, "act-3", 3, 2, 0, 1, 0},
		{decision, "d-free", 20, 3, 0, 0, 0},
		{usage, "", 5, 1, 0, 0, 0},
	})
	if m := b.MostFailedMilestone; m.GetId() != "write" || m.GetFailures() != 2 {
		t.Errorf("the stage that failed most is %v, want write with 2 failures", m)
	}
	if s := b.MostFailedStep; s.GetId() != "act-2" {
		t.Errorf("the step that failed most is %v, want act-2", s)
	}
	// act-1 runs from its proposal (the third event) to its outcome
	// (the tenth); gather from that proposal to its decision, one later.
	if a := b.Steps[0]; a.Elapsed.AsDuration() != 7*time.Second || !a.StartedAt.AsTime().Equal(start.Add(2*time.Second)) {
		t.Errorf("act-1 took %v from %v, want 7s from the third event", a.Elapsed.AsDuration(), a.StartedAt.AsTime())
	}
	if got := b.Milestones[0].CostShare; got < 65.5 || got > 65.6 {
		t.Errorf("gather's share of the cost is %.2f %%, want 57/87", got)
	}
	md := state.ReceiptMarkdown(r)
	for _, want := range []string{"## Per milestone and per step", "| `gather` | 8s | 130 | 57 | 65.5 % | 1 | 1 | 0 |", "| no milestone |",
		"**Stage that failed most:** `write`, 2 failures", "| usage reported outside actions | `write` |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
}

// BenchmarkBuildReceiptLongTask builds the receipt of a task with 300
// actions across three milestones, each retried once, and 300 reported
// decisions: about 2,400 events.
func BenchmarkBuildReceiptLongTask(b *testing.B) {
	k := contract(1)
	k.Budget = &stewardv1.Budget{Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "m0"}, {MilestoneId: "m1"}, {MilestoneId: "m2"}}}
	h := []event.Payload{&stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{}}
	for i := range 300 {
		id, m := fmt.Sprintf("act-%d", i), fmt.Sprintf("m%d", i%3)
		h = append(h, inMilestone(m, act(id, "search", "web", "rev-A"))...)
		h = append(h,
			&stewardv1.ActionWaiting{ActionId: id, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Reason: "503"},
			&stewardv1.ActionDispatched{ActionId: id, Attempt: 2, Worker: "w1"},
			&stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, ResultRef: "r", ResultHash: "h", Attempt: 2, Tokens: 10, CostMicros: 5}},
			reportedDecision(fmt.Sprintf("d-%d", i), m, 9, 1),
		)
	}
	recs := stewardtest.History(b, "long", h...)
	b.ResetTimer()
	for range b.N {
		if _, err := state.BuildReceipt(recs); err != nil {
			b.Fatal(err)
		}
	}
}
