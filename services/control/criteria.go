package control

import (
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// checkCriteria checks a contract's acceptance criteria.
func checkCriteria(cs []*stewardv1.AcceptanceCriterion) error {
	if err := checkList("contract.acceptance_criteria", len(cs)); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, c := range cs {
		f := fmt.Sprintf("contract.acceptance_criteria[%d]", i)
		if err := checkText(f+".id", c.Id, MaxRefLen, true); err != nil {
			return err
		}
		if seen[c.Id] {
			return errs.Field(f+".id", "%q appears twice", c.Id)
		}
		seen[c.Id] = true
		if err := checkText(f+".description", c.Description, MaxTextLen, false); err != nil {
			return err
		}
		if err := checkText(f+".expression", c.Expression, MaxTextLen, false); err != nil {
			return err
		}
	}
	return nil
}
