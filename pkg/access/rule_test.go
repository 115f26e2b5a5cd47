package access_test

import (
	"testing"

	"github.com/steward-run/steward/pkg/access"
)

// TestRuleKinds checks each kind of rule: anyone, a role, parties, and a
// combination, and that admin passes them all.
func TestRuleKinds(t *testing.T) {
	anyone := access.Rule{}
	role := access.Rule{Roles: []string{access.ToolAdmin}}
	agent := access.Rule{Parties: access.Agent}
	steer := access.Rule{Parties: access.Agent | access.Owner, Roles: []string{access.Operator}}
	answer := access.Rule{Parties: access.Owner | access.Backup}
	task := access.TaskParties{Agents: []string{"agent:a", "agent:delegate"}, Owners: []string{"user:req", "user:owner"}, Backup: "role:on-call"}

	for _, tc := range []struct {
		name      string
		rule      access.Rule
		roles     []string
		principal string
		byRoles   bool // allowed before the task is looked at
		byParty   bool // allowed by its part in the task
	}{
		{"anyone, no role", anyone, nil, "user:x", true, false},
		{"a role, held", role, []string{"viewer", access.ToolAdmin}, "user:x", true, false},
		{"a role, not held", role, []string{"viewer"}, "user:x", false, false},
		{"a role, admin", role, []string{access.Admin}, "user:x", true, false},
		{"agent, the creator", agent, nil, "agent:a", false, true},
		{"agent, the delegate", agent, nil, "agent:delegate", false, true},
		{"agent, an owner is not the agent", agent, nil, "user:owner", false, false},
		{"agent, an operator is not the agent", agent, []string{access.Operator}, "user:ops", false, false},
		{"agent, admin", agent, []string{access.Admin}, "user:root", true, false},
		{"steering, the requester", steer, nil, "user:req", false, true},
		{"steering, the agent", steer, nil, "agent:a", false, true},
		{"steering, an operator", steer, []string{access.Operator}, "user:ops", true, false},
		{"steering, a stranger", steer, []string{"authorizer"}, "user:eve", false, false},
		{"answering, the backup role's holder", answer, []string{"on-call"}, "user:oc", false, true},
		{"answering, not the backup", answer, []string{"on-call-2"}, "user:eve", false, false},
		{"steering, the backup is no party", steer, []string{"on-call"}, "user:oc", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rule.AllowsRoles(tc.roles); got != tc.byRoles {
				t.Errorf("AllowsRoles(%v) = %v, want %v", tc.roles, got, tc.byRoles)
			}
			if got := tc.rule.AllowsParty(tc.principal, tc.roles, task); got != tc.byParty {
				t.Errorf("AllowsParty(%s) = %v, want %v", tc.principal, got, tc.byParty)
			}
		})
	}
}

func TestRuleWords(t *testing.T) {
	steer, _ := access.For("/steward.v1.TaskService/PauseTask")
	if got, want := steer.Who(), "party:agent, party:owner, role:operator"; got != want {
		t.Errorf("PauseTask Who() = %q, want %q", got, want)
	}
	if got, want := steer.Needs(), "the agent the task belongs to (its creator or delegate), its requester or accountable owner or the operator role"; got != want {
		t.Errorf("PauseTask Needs() = %q, want %q", got, want)
	}
	reg, _ := access.For("/steward.v1.ToolService/RegisterTool")
	if got, want := reg.Needs(), "the tool-admin role"; got != want {
		t.Errorf("RegisterTool Needs() = %q, want %q", got, want)
	}
	del, _ := access.For("/steward.v1.TaskService/DelegateTask")
	if del.Field() != "parent_task_id" {
		t.Errorf("DelegateTask's task field = %q, want parent_task_id", del.Field())
	}
}
