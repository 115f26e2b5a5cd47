package canary

import (
	"strings"
	"testing"
	"time"
)

func baseRun() Run {
	return Run{
		Sample: "refund-normal", Status: "accepted", Accepted: true,
		Actions: []ActionRecord{
			{Tool: "lookup", Version: "1.0.0", Decision: "allow", Status: "succeeded"},
			{Tool: "refund", Version: "1.0.0", Decision: "allow", Status: "succeeded"},
		},
		Decisions:  []DecisionEntry{{Model: "gpt-a"}},
		CostMicros: 1000, Millis: 100,
	}
}

var normal = Sample{Name: "refund-normal", Kind: KindNormal, Expect: Expect{Accepted: true}}

// TestJudge: what fails a sample, what is only reported, and the words.
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(r *Run)
		tol      Tolerances
		pass     bool
		sentence string
	}{
		{"same", func(*Run) {}, Tolerances{}, true, "sample refund-normal: passed"},
		{"denied", func(r *Run) {
			r.Accepted, r.Status, r.Reason = false, "running", "action 2 refund denied: refunds are frozen"
			r.Actions[1].Decision, r.Actions[1].Status = "deny", "denied"
		}, Tolerances{}, false,
			"sample refund-normal: action 2 tool refund@1.0.0: decision allow → deny; not accepted: action 2 refund denied: refunds are frozen (expected accepted)"},
		{"approval now", func(r *Run) { r.Actions[1].Decision = "approval" }, Tolerances{}, false,
			"sample refund-normal: action 2 tool refund@1.0.0: decision allow → approval"},
		{"outcome", func(r *Run) { r.Actions[0].Status = "failed" }, Tolerances{}, false,
			"sample refund-normal: action 1 tool lookup@1.0.0: outcome succeeded → failed"},
		{"new version", func(r *Run) { r.Actions[1].Version = "2.0.0" }, Tolerances{}, true,
			"sample refund-normal: passed (action 2 tool refund@2.0.0: version 1.0.0 → 2.0.0)"},
		{"new model", func(r *Run) { r.Decisions[0].Model = "gpt-b" }, Tolerances{}, true,
			"sample refund-normal: passed (decision 1: model gpt-a → gpt-b)"},
		{"action missing", func(r *Run) { r.Actions = r.Actions[:1] }, Tolerances{}, false,
			"sample refund-normal: action 2 tool refund@1.0.0: not proposed"},
		{"action added", func(r *Run) { r.Actions = append(r.Actions, ActionRecord{"mail", "1", "allow", "succeeded"}) }, Tolerances{}, false,
			"sample refund-normal: action 3 tool mail@1: new (decision allow, succeeded)"},
		{"other tool", func(r *Run) { r.Actions[0].Tool = "search" }, Tolerances{}, false,
			"sample refund-normal: action 1: tool lookup@1.0.0 → search@1.0.0"},
		{"decision missing", func(r *Run) { r.Decisions = nil }, Tolerances{}, false,
			"sample refund-normal: decision 1 (model gpt-a): not recorded"},
		{"cost within", func(r *Run) { r.CostMicros = 1400 }, Tolerances{MaxCostRatio: 1.5}, true,
			"sample refund-normal: passed (cost 1000µ → 1400µ (×1.40, tolerance ×1.50))"},
		{"cost past", func(r *Run) { r.CostMicros = 1600 }, Tolerances{MaxCostRatio: 1.5}, false,
			"sample refund-normal: cost 1000µ → 1600µ (×1.60, tolerance ×1.50)"},
		{"cost untolerated", func(r *Run) { r.CostMicros = 9000 }, Tolerances{}, true,
			"sample refund-normal: passed (cost 1000µ → 9000µ)"},
		{"time past", func(r *Run) { r.Millis = 300 }, Tolerances{MaxTimeRatio: 2}, false,
			"sample refund-normal: time 100ms → 300ms (×3.00, tolerance ×2.00)"},
	} {
		run := baseRun()
		tc.edit(&run)
		base := baseRun()
		v := Judge(normal, run, &base, tc.tol)
		if v.Pass != tc.pass || v.Sentence() != tc.sentence {
			t.Errorf("%s: pass %v, %q\nwant pass %v, %q", tc.name, v.Pass, v.Sentence(), tc.pass, tc.sentence)
		}
	}
}

// TestJudgeExpectations: with no baseline a sample is judged on its
// expectation alone; an expected failure must fail for the reason named.
func TestJudgeExpectations(t *testing.T) {
	declined := Sample{Name: "charge-declined", Kind: KindExpectedFailure, Expect: Expect{Reason: "card declined"}}
	failed := Run{Sample: "charge-declined", Status: "running", Reason: "action 1 charge failed (deterministic): HTTP 402: card declined"}
	if v := Judge(declined, failed, nil, Tolerances{}); !v.Pass || !v.NoBaseline || len(v.Differences) != 0 {
		t.Errorf("expected failure, no baseline: %+v", v)
	}
	other := failed
	other.Reason = "action 1 charge failed (transient): HTTP 503"
	if v := Judge(declined, other, nil, Tolerances{}); v.Pass || !strings.Contains(v.Sentence(), `(expected not accepted, "card declined")`) {
		t.Errorf("another reason: %s", v.Sentence())
	}
	accepted := Run{Sample: "charge-declined", Status: "accepted", Accepted: true}
	if v := Judge(declined, accepted, nil, Tolerances{}); v.Pass || v.Sentence() != `sample charge-declined: accepted (expected not accepted, "card declined")` {
		t.Errorf("accepted: %s", v.Sentence())
	}
}

func TestBaselineFromAPassingReport(t *testing.T) {
	dir := t.TempDir()
	rep := &Report{Definition: "refunds", Pass: true, Verdicts: []Verdict{{Sample: "refund-normal", Run: Run{TaskID: "t-1", Accepted: true}}}}
	file := dir + "/refunds.baseline.json"
	if b, err := LoadBaseline(file, "refunds"); b != nil || err != nil {
		t.Fatalf("no file is no baseline: %v %v", b, err)
	}
	if err := WriteBaseline(file, rep.Baseline(baseRunTime)); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBaseline(file, "refunds")
	if err != nil || !b.Runs["refund-normal"].Accepted || b.Runs["refund-normal"].TaskID != "" {
		t.Fatalf("%+v %v", b, err)
	}
	if _, err := LoadBaseline(file, "payouts"); err == nil || !strings.Contains(err.Error(), `"refunds"`) {
		t.Errorf("another canary's baseline: %v", err)
	}
}

var baseRunTime = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
