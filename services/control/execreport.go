package control

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Limits on an execution report (MarkProducedRequest.report). It is the
// agent's prose with references, recorded on the task's log: bounded like
// every other free text, and as a whole, so that one round cannot carry
// more than a reader would read.
const (
	MaxReportSteps      = 64
	MaxReportDeviations = 32
	MaxReportOpen       = 32
	MaxReportRefs       = 16        // of each kind, per step
	MaxReportBytes      = 64 * 1024 // the whole report, encoded
)

// checkReportShape checks an execution report's sizes and required text,
// naming the first field that is wrong; what its references name is the
// fold's to check (task.CheckReport), against the task as it stands.
func checkReportShape(r *stewardv1.ExecutionReport) error {
	if r == nil {
		return nil
	}
	checks := []error{
		checkText("report.summary", r.Summary, MaxTextLen, false),
		checkCount("report.steps", len(r.Steps), MaxReportSteps),
		checkCount("report.deviations", len(r.Deviations), MaxReportDeviations),
		checkCount("report.left_open", len(r.LeftOpen), MaxReportOpen),
	}
	for i, s := range r.LeftOpen {
		checks = append(checks, checkText(fmt.Sprintf("report.left_open[%d]", i), s, MaxReasonLen, true))
	}
	for i, st := range r.Steps {
		f := fmt.Sprintf("report.steps[%d]", i)
		checks = append(checks, checkText(f+".description", st.Description, MaxReasonLen, true))
		for _, refs := range []struct {
			name string
			ids  []string
		}{{"action_ids", st.ActionIds}, {"artifacts", st.Artifacts}, {"decision_ids", st.DecisionIds}} {
			checks = append(checks, checkCount(f+"."+refs.name, len(refs.ids), MaxReportRefs))
			for j, id := range refs.ids {
				checks = append(checks, checkText(fmt.Sprintf("%s.%s[%d]", f, refs.name, j), id, 2*MaxRefLen, true))
			}
		}
	}
	for i, d := range r.Deviations {
		f := fmt.Sprintf("report.deviations[%d]", i)
		checks = append(checks, checkText(f+".what", d.What, MaxReasonLen, true), checkText(f+".why", d.Why, MaxReasonLen, true))
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if n := proto.Size(r); n > MaxReportBytes {
		return &errs.Error{Code: errs.TooLarge, Field: "report", Message: fmt.Sprintf("is %d bytes encoded; the limit is %d", n, MaxReportBytes)}
	}
	return nil
}

// checkCount refuses a list longer than most.
func checkCount(field string, n, most int) error {
	if n > most {
		return &errs.Error{Code: errs.TooLarge, Field: field, Message: fmt.Sprintf("has %d entries; the limit is %d", n, most)}
	}
	return nil
}
