package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
)

// TestCriteriaAreCompiledAtCreation: a criterion that cannot be evaluated
// is refused when the task is created, naming the criterion's field and
// saying what CEL said.
func TestCriteriaAreCompiledAtCreation(t *testing.T) {
	r := idleHarness(t)
	ctl := r.ctl
	tests := []struct {
		name     string
		criteria []*stewardv1.AcceptanceCriterion
		field    string // empty: the contract is accepted
		message  string
	}{
		{"bad syntax", crit(`"report" in artifacts &&`), "contract.acceptance_criteria[0].expression", "Syntax error"},
		{"not a boolean", crit(`size(artifacts) + 1`), "contract.acceptance_criteria[0].expression", "not bool"},
		{"a string", crit(`"yes"`), "contract.acceptance_criteria[0].expression", "not bool"},
		{"unknown variable", crit(`size(artifacts) > 0`, `files.report.size > 0`), "contract.acceptance_criteria[1].expression", "undeclared reference to 'files'"},
		{"unknown function", crit(`artifacts.all(k, k.shout())`), "contract.acceptance_criteria[0].expression", "undeclared reference to 'shout'"},
		{"empty without reviewer", crit(``), "contract.acceptance_criteria[0].expression", "requires_reviewer"},
		{"a boolean", crit(`"report" in artifacts && artifacts["report"].size > 0`), "", ""},
		{"dyn, known at run time", crit(`artifacts.summary.json.ok`), "", ""},
		{"over actions", crit(`actions.exists(a, a.tool == "search" && a.status == "succeeded")`), "", ""},
		{"empty with reviewer", []*stewardv1.AcceptanceCriterion{{Id: "tone", Description: "reads well", RequiresReviewer: true}}, "", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := validRequest("")
			req.Contract.AcceptanceCriteria = tt.criteria
			req.Contract.AcceptanceOwnerRef = "user:rev"
			_, _, err := ctl.CreateTask(context.Background(), "t", req)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("case %d: %v", i, err)
				}
				return
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != tt.field || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("err = %v, want invalid %s saying %q", err, tt.field, tt.message)
			}
		})
	}
}

// crit returns criteria c0, c1, … with the expressions given.
func crit(exprs ...string) []*stewardv1.AcceptanceCriterion {
	out := make([]*stewardv1.AcceptanceCriterion, len(exprs))
	for i, e := range exprs {
		out[i] = &stewardv1.AcceptanceCriterion{Id: "c" + string(rune('0'+i)), Expression: e}
	}
	return out
}

// TestCriteriaSeeArtifactsAndActions evaluates criteria over a task's
// artifacts (their fields, parsed JSON content, text) and its actions
// (status, parsed result): each passes or fails as written, and an
// evaluation error fails its check with the error as detail.
func TestCriteriaSeeArtifactsAndActions(t *testing.T) {
	r := newHarness(t)
	tests := []struct {
		expr   string
		passed bool
		detail string
	}{
		{`"report" in artifacts && artifacts["report"].size > 0`, true, ""},
		{`artifacts.report.version == 2 && artifacts.report.text.startsWith("# Incidents v2")`, true, ""},
		{`artifacts.report.media_type == "text/markdown; charset=utf-8" && artifacts.report.json == null`, true, ""},
		{`artifacts.summary.json.count == 3 && size(artifacts.summary.json.items) == 3`, true, ""},
		{`artifacts.summary.json.count > 2.5 && artifacts.summary.json.items[0] == "db"`, true, ""},
		{`artifacts.summary.json.count > 2 && artifacts.summary.json.count <= 3`, true, ""},
		{`artifacts.summary.text == "" && artifacts.summary.sha256.size() == 64`, true, ""},
		{`artifacts.summary.json.count == 4`, false, "evaluated to false"},
		{`artifacts.summary.json.count`, false, "not true or false"},
		{`artifacts.missing.size > 0`, false, "no such key: missing"},
		{`artifacts.summary.json.absent == 1`, false, "no such key: absent"},
		{`artifacts.broken.json.count == 1`, false, "is not valid JSON"},
		{`artifacts.external.json == null && artifacts.external.text == "" && artifacts.external.size == 2048`, true, ""},
		{`artifacts.external.uri.startsWith("s3://") && artifacts.external.action_id == ""`, true, ""},
		// Maps iterate in key order, so what map() gives is the same every time.
		{`artifacts.map(k, k) == ["broken", "external", "report", "summary"]`, true, ""},
		{`artifacts.summary.json.map(k, k) == ["count", "items"]`, true, ""},
		{`actions.exists(a, a.tool == "search" && a.status == "succeeded" && a.result.hits == 2)`, true, ""},
		{`actions.filter(a, a.status == "failed").size() == 1 && actions[1].result == null`, true, ""},
		{`actions.all(a, a.compensates == "" && a.target == "acct:42")`, true, ""},
		{`artifacts.summary.action_id == actions[0].id`, true, ""},
		// As deep as comprehensions may nest, over lists of 100: 10^6
		// steps, stopped by the cost limit or, under the race detector on
		// a busy machine, by the deadline first.
		{stewardtest.NestedComprehensions(control.MaxCriterionComprehensions, 100), false, ""},
	}
	criteria := make([]*stewardv1.AcceptanceCriterion, len(tests))
	for i, tt := range tests {
		criteria[i] = &stewardv1.AcceptanceCriterion{Id: string(rune('a' + i)), Expression: tt.expr}
	}
	criteria = append(criteria, &stewardv1.AcceptanceCriterion{Id: "tone", RequiresReviewer: true})
	id := r.acceptanceTask(t, "evaluate", func(c *stewardv1.TaskContract) {
		c.AcceptanceCriteria, c.AcceptanceOwnerRef = criteria, "user:rev"
	})

	search := r.propose(t, id, "p1", "search", "acct:42", map[string]any{"q": "incidents"})
	r.run(t, id, search.ActionId, succeeded(), []byte(`{"hits": 2, "ids": ["i1", "i2"]}`), time.Now())
	broken := r.propose(t, id, "p2", "search", "acct:42", map[string]any{"q": "more"})
	r.run(t, id, broken.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC, "bad query"), nil, time.Now())

	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/markdown", Content: []byte("# Incidents\n")})
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "report", MediaType: "text/markdown; charset=utf-8", Content: []byte("# Incidents v2\n")})
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "summary", MediaType: "application/json", ActionId: search.ActionId,
		Content: []byte(`{"items": ["db", "dns", "cdn"], "count": 3}`)})
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "broken", MediaType: "application/vnd.steward+json", Content: []byte(`{"count":`)})
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "external", MediaType: "application/json",
		Uri: "s3://bucket/report.json", Sha256: strings.Repeat("ab", 32), SizeBytes: 2048})
	_, round, err := r.ctl.MarkProduced(context.Background(), "agent", &stewardv1.MarkProducedRequest{TaskId: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(round.Checks) != len(tests)+1 {
		t.Fatalf("%d checks, want %d", len(round.Checks), len(tests)+1)
	}
	for i, tt := range tests {
		c := round.Checks[i]
		if c.CriterionId != criteria[i].Id || c.Expression != tt.expr {
			t.Errorf("check %d is %s %q", i, c.CriterionId, c.Expression)
		}
		if c.Passed != tt.passed || !strings.Contains(c.Detail, tt.detail) {
			t.Errorf("%s: passed %v (%s), want %v with %q", tt.expr, c.Passed, c.Detail, tt.passed, tt.detail)
		}
	}
	if c := round.Checks[len(tests)]; !c.Passed || !strings.Contains(c.Detail, "acceptance owner") {
		t.Errorf("the reviewer's criterion: %v", c)
	}
	if round.Decision != stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED {
		t.Errorf("decision %s, want checks failed", round.Decision)
	}
	want := []string{"report@2", "summary@1", "broken@1", "external@1"}
	if strings.Join(round.Artifacts, " ") != strings.Join(want, " ") {
		t.Errorf("round covers %v, want %v", round.Artifacts, want)
	}
}
