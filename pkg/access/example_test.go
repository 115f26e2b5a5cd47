package access_test

import (
	"fmt"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// A stranger holding an approver's role may not pause a task; its agent
// may, once the task's parties are looked up.
func ExampleFor() {
	rule, _ := access.For(stewardv1connect.TaskServicePauseTaskProcedure)
	parties := access.TaskParties{Agents: []string{"agent:dev"}, Owners: []string{"user:ana"}}

	fmt.Println(rule.Who())
	fmt.Println(rule.AllowsRoles([]string{"authorizer"}), rule.AllowsParty("user:eve", nil, parties))
	fmt.Println(rule.AllowsRoles(nil), rule.AllowsParty("agent:dev", nil, parties))
	fmt.Println(rule.AllowsRoles([]string{access.Admin}))
	// Output:
	// party:agent, party:owner, role:operator
	// false false
	// false true
	// true
}
