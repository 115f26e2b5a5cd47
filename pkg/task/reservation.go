package task

import (
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// DelegationReserveSource is the source of the BudgetConsumed that
// reserves a sub-task's budget on its parent, followed by the sub-task's
// id: the one record of a sub-task on its parent's log before it ends.
const DelegationReserveSource = "reserved for delegated task "

// ReservedFor returns the task a BudgetConsumed reserves budget for — a
// sub-task (DelegationReserveSource) or a fork (reserved_for) — or ""
// when it is spending of the task's own.
func ReservedFor(c *stewardv1.BudgetConsumed) string {
	if child, ok := strings.CutPrefix(c.GetSource(), DelegationReserveSource); ok {
		return child
	}
	return c.GetReservedFor()
}
