package plan

import (
	"bytes"
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Revision is what a new version of a plan does to the old one's steps,
// by id. It is the basis of a revision: kept steps keep their state (a
// succeeded step is never redone, an action in flight stays in flight);
// withdrawn steps that have not started are withdrawn.
type Revision struct {
	// Kept: in both, with the same canonical definition. New plan order.
	Kept []string
	// Changed: in both, defined differently. New plan order. Whether a
	// changed step's action is kept is for the runtime to decide: it
	// keeps an action whose canonical request (known once the parameters
	// are evaluated) is unchanged, and never redoes a succeeded step.
	Changed []string
	// Added: only in the new plan. New plan order.
	Added []string
	// Withdrawn: only in the old plan. Old plan order.
	Withdrawn []string
}

// Diff compares two versions of a plan step by step, by id, comparing
// definitions by their canonical JSON (see Hash).
func Diff(old, new *stewardv1.Plan) (Revision, error) {
	before := make(map[string][]byte, len(old.GetSteps()))
	for _, s := range old.GetSteps() {
		c, err := canonical(s)
		if err != nil {
			return Revision{}, fmt.Errorf("plan diff: step %s: %w", s.GetId(), err)
		}
		before[s.GetId()] = c
	}
	var r Revision
	after := make(map[string]bool, len(new.GetSteps()))
	for _, s := range new.GetSteps() {
		after[s.GetId()] = true
		c, err := canonical(s)
		if err != nil {
			return Revision{}, fmt.Errorf("plan diff: step %s: %w", s.GetId(), err)
		}
		switch b, ok := before[s.GetId()]; {
		case !ok:
			r.Added = append(r.Added, s.GetId())
		case bytes.Equal(b, c):
			r.Kept = append(r.Kept, s.GetId())
		default:
			r.Changed = append(r.Changed, s.GetId())
		}
	}
	for _, s := range old.GetSteps() {
		if !after[s.GetId()] {
			r.Withdrawn = append(r.Withdrawn, s.GetId())
		}
	}
	return r, nil
}
