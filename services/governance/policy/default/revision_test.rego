# Unit tests for revision.rego. CI runs them through policy_test.go
# (TestDefaultBundleRegoTests).
package steward.revision_test

import data.steward.revision

criterion(id) := {"id": id, "expression": "true"}

# revision_input is the input for a revision of changed in a task of
# tier, whose criteria go from before to after.
revision_input(tier, changed, before, after) := {
	"task": {"task_id": "task-1", "risk_tier": tier, "acceptance_criteria": before},
	"contract": {"task_id": "task-1", "risk_tier": tier, "acceptance_criteria": after},
	"risk": {"contract_risk_tier": tier},
	"revision": {"version": 2, "changed": changed},
}

test_a_low_risk_revision_is_the_owners_alone if {
	d := revision.decision with input as revision_input("RISK_TIER_LOW", ["intent"], [], [])
	d.decision == "allow"
	d.required_approver_roles == []
	d.required_approvals == 0
}

test_a_high_risk_revision_needs_an_authorizer if {
	d := revision.decision with input as revision_input("RISK_TIER_HIGH", ["intent", "acceptance_criteria"], [criterion("a")], [criterion("b")])
	d.decision == "require_approval"
	d.required_approver_roles == ["authorizer"]
	d.required_approvals == 1
	d.reasons == ["a revision of acceptance_criteria, intent in a RISK_TIER_HIGH task needs an authorizer's approval as well as the owner's"]
}

test_a_critical_revision_needs_an_authorizer if {
	d := revision.decision with input as revision_input("RISK_TIER_CRITICAL", ["desired_outcome"], [], [])
	d.decision == "require_approval"
}

test_dropping_a_criterion_of_a_high_risk_task_is_denied if {
	d := revision.decision with input as revision_input("RISK_TIER_HIGH", ["acceptance_criteria"], [criterion("a"), criterion("b")], [criterion("a")])
	d.decision == "deny"
	d.reasons == ["a revision may not drop acceptance criteria of a RISK_TIER_HIGH task: it has 2, the revision 1"]
}

test_dropping_criteria_of_a_low_risk_task_is_allowed if {
	d := revision.decision with input as revision_input("RISK_TIER_LOW", ["acceptance_criteria"], [criterion("a")], [])
	d.decision == "allow"
}
