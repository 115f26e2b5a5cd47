package control

import (
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Limits on a proposal's rationale: enough for a person to decide on, and
// small enough that an approval stays readable.
const (
	MaxRationaleEvidence     = 16
	MaxRationaleAlternatives = 8
	MaxRationaleEntryLen     = 1024
)

// checkRationale checks the proposer's case for an action (optional; the
// default policy requires expected_impact and rollback_plan of a high-risk
// change). Errors name the field as rationale.<field>.
func checkRationale(r *stewardv1.ActionRationale) error {
	if r == nil {
		return nil
	}
	for _, err := range []error{
		checkText("rationale.expected_impact", r.ExpectedImpact, MaxTextLen, false),
		checkText("rationale.rollback_plan", r.RollbackPlan, MaxTextLen, false),
		checkEntries("rationale.evidence", r.Evidence, MaxRationaleEvidence),
		checkEntries("rationale.alternatives", r.Alternatives, MaxRationaleAlternatives),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkEntries checks a list of at most maxN non-empty texts.
func checkEntries(field string, list []string, maxN int) error {
	if len(list) > maxN {
		return &errs.Error{Code: errs.TooLarge, Field: field, Message: fmt.Sprintf("has %d entries; the limit is %d", len(list), maxN)}
	}
	for i, s := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if s == "" {
			return errs.Field(f, "is empty")
		}
		if err := checkText(f, s, MaxRationaleEntryLen, false); err != nil {
			return err
		}
	}
	return nil
}
