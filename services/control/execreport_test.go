package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

// TestExecutionReportIsCheckedAndRecorded: MarkProduced refuses a report
// that names an action, artifact, decision or plan step the task does
// not have, or is too large or missing its words, naming the field and
// appending nothing; a good report is recorded on the round and on the
// TaskProduced event, as given.
func TestExecutionReportIsCheckedAndRecorded(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.acceptanceTask(t, "report", func(c *stewardv1.TaskContract) { c.AcceptanceOwnerRef = owner })
	search := r.propose(t, id, "p1", "search", "acct:42", map[string]any{"q": "x"})
	r.run(t, id, search.ActionId, succeeded(), []byte(`{}`), time.Now())
	r.submit(t, id, &stewardv1.SubmitArtifactRequest{Name: "summary", MediaType: "text/plain", Content: []byte("three items")})
	if _, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: aDecision("d1")}); err != nil {
		t.Fatal(err)
	}
	good := func() *stewardv1.ExecutionReport {
		return &stewardv1.ExecutionReport{
			Summary: "searched, then summarised",
			Steps: []*stewardv1.ReportStep{
				{Description: "searched the account", ActionIds: []string{search.ActionId}, DecisionIds: []string{"d1"}},
				{Description: "wrote the summary", Artifacts: []string{"summary", "summary@1"}},
			},
			Deviations: []*stewardv1.ReportDeviation{{What: "one search, not two", Why: "the first found everything"}},
			LeftOpen:   []string{"the archive was not searched"},
		}
	}
	tests := []struct {
		name  string
		edit  func(*stewardv1.ExecutionReport)
		code  errs.Code
		field string
	}{
		{"an action the task does not have", func(r *stewardv1.ExecutionReport) { r.Steps[0].ActionIds = append(r.Steps[0].ActionIds, "act-nope") }, errs.Invalid, "report.steps[0].action_ids[1]"},
		{"an artifact the task does not have", func(r *stewardv1.ExecutionReport) { r.Steps[1].Artifacts[1] = "summary@2" }, errs.Invalid, "report.steps[1].artifacts[1]"},
		{"a decision the task does not have", func(r *stewardv1.ExecutionReport) { r.Steps[0].DecisionIds = []string{"d9"} }, errs.Invalid, "report.steps[0].decision_ids[0]"},
		{"a plan step of a task without a plan", func(r *stewardv1.ExecutionReport) { r.Deviations[0].PlanStepId = "fetch" }, errs.Invalid, "report.deviations[0].plan_step_id"},
		{"a step without words", func(r *stewardv1.ExecutionReport) { r.Steps[1].Description = "" }, errs.Invalid, "report.steps[1].description"},
		{"a deviation without why", func(r *stewardv1.ExecutionReport) { r.Deviations[0].Why = "" }, errs.Invalid, "report.deviations[0].why"},
		{"an empty open item", func(r *stewardv1.ExecutionReport) { r.LeftOpen = append(r.LeftOpen, "") }, errs.Invalid, "report.left_open[1]"},
		{"a long summary", func(r *stewardv1.ExecutionReport) { r.Summary = strings.Repeat("s", control.MaxTextLen+1) }, errs.TooLarge, "report.summary"},
		{"too many steps", func(r *stewardv1.ExecutionReport) {
			for range control.MaxReportSteps {
				r.Steps = append(r.Steps, &stewardv1.ReportStep{Description: "again"})
			}
		}, errs.TooLarge, "report.steps"},
	}
	before := r.task(t, id).EventCount
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := good()
			tt.edit(rep)
			_, _, err := r.ctl.MarkProduced(ctx, "agent", &stewardv1.MarkProducedRequest{TaskId: id, Report: rep})
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
				t.Fatalf("err = %v, want %s naming %s", err, tt.code, tt.field)
			}
		})
	}
	if n := r.task(t, id).EventCount; n != before {
		t.Fatalf("refused reports appended %d events", n-before)
	}

	tk, round, err := r.ctl.MarkProduced(ctx, "agent", &stewardv1.MarkProducedRequest{TaskId: id, RequestId: "prod-1", Report: good()})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(round.Report, good()) || !proto.Equal(tk.Acceptance[0].Report, good()) {
		t.Errorf("the round's report is %v, want %v", round.Report, good())
	}
	recorded := 0
	r.countWhere(t, id, func(ev *stewardv1.Event) bool {
		if p := ev.GetTaskProduced(); p != nil && proto.Equal(p.Report, good()) {
			recorded++
		}
		return false
	})
	if recorded != 1 {
		t.Errorf("%d TaskProduced events carry the report, want 1", recorded)
	}
}
