package objective_test

import (
	"fmt"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/objective"
	"github.com/steward-run/steward/pkg/stewardtest"
)

func created(tokens int64) *stewardv1.ObjectiveCreated {
	return &stewardv1.ObjectiveCreated{Objective: &stewardv1.Objective{ObjectiveId: "q3", OwnerRef: "user:ana", Intent: "ship Q3",
		Budget: &stewardv1.ObjectiveBudget{MaxTokens: tokens}}}
}

// TestFoldKeepsTheOrderAndTheBudget: each history is refused at its last
// event, for the reason named; the one before it folds.
func TestFoldKeepsTheOrderAndTheBudget(t *testing.T) {
	done := &stewardv1.ObjectiveClosed{Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE, Reason: "shipped"}
	for _, c := range []struct {
		name    string
		history []event.Payload
		code    errs.Code
	}{
		{"a task before the objective", []event.Payload{&stewardv1.ObjectiveTaskAdded{TaskId: "t", Tokens: 1}}, errs.FailedPrecondition},
		{"created twice", []event.Payload{created(10), created(10)}, errs.FailedPrecondition},
		{"past the budget", []event.Payload{created(10), &stewardv1.ObjectiveTaskAdded{TaskId: "a", Tokens: 6}, &stewardv1.ObjectiveTaskAdded{TaskId: "b", Tokens: 5}}, errs.Invalid},
		{"a task after the close", []event.Payload{created(0), done, &stewardv1.ObjectiveTaskAdded{TaskId: "a", Tokens: 5}}, errs.FailedPrecondition},
		{"closed twice", []event.Payload{created(0), done, done}, errs.FailedPrecondition},
		{"closed open", []event.Payload{created(0), &stewardv1.ObjectiveClosed{Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN}}, errs.Invalid},
	} {
		recs := stewardtest.History(t, "q3", c.history...)
		if _, err := objective.Fold(recs[:len(recs)-1]); err != nil {
			t.Errorf("%s: the history before the last event: %v", c.name, err)
		}
		if _, err := objective.Fold(recs); !errs.Is(err, c.code) {
			t.Errorf("%s: %v, want %v", c.name, err, c.code)
		}
	}
}

func ExampleFold() {
	var tb testing.T
	recs := stewardtest.History(&tb, "q3", created(100),
		&stewardv1.ObjectiveTaskAdded{TaskId: "a", Tokens: 60},
		&stewardv1.ObjectiveTaskAdded{TaskId: "b", Tokens: 40},
		&stewardv1.ObjectiveClosed{Status: stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_DONE, Reason: "shipped"})
	o, err := objective.Fold(recs)
	if err != nil {
		panic(err)
	}
	fmt.Println(objective.StatusName(o.Status), o.ReservedTokens, o.TasksAdded, objective.Left(o.Budget.MaxTokens, o.ReservedTokens))
	// Output: done 100 2 0
}
