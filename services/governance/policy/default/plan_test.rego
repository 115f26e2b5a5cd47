# Unit tests for plan.rego. CI runs them through policy_test.go
# (TestDefaultBundleRegoTests).
package steward.plan_test

import data.steward.plan

tool(effect) := {"name": "t", "version": "1", "effect_class": effect}

# plan_input is the input for a plan whose steps call tools of effects,
# one call each, in a task of tier.
plan_input(effects, tier) := {
	"task": {"task_id": "task-1", "risk_tier": tier},
	"risk": {"contract_risk_tier": tier},
	"steps": [{"id": sprintf("s%d", [i]), "kind": "action", "calls": 1, "tool": tool(e)} | some i, e in effects],
	"counts": {"steps": count(effects), "calls": count(effects), "effects": {e: n |
		some e in effects
		n := count([x | some x in effects; x == e])
	}},
}

test_reads_are_allowed if {
	d := plan.decision with input as plan_input(["EFFECT_CLASS_READ", "EFFECT_CLASS_READ"], "RISK_TIER_LOW")
	d.decision == "allow"
	d.risk_tier == "RISK_TIER_LOW"
	d.required_approver_roles == []
}

test_a_few_irreversible_calls_are_allowed_as_a_plan if {
	d := plan.decision with input as plan_input(["EFFECT_CLASS_IRREVERSIBLE", "EFFECT_CLASS_IRREVERSIBLE", "EFFECT_CLASS_IRREVERSIBLE"], "RISK_TIER_LOW")
	d.decision == "allow"
	d.risk_tier == "RISK_TIER_HIGH"
}

test_many_irreversible_calls_need_approval if {
	d := plan.decision with input as plan_input(["EFFECT_CLASS_IRREVERSIBLE", "EFFECT_CLASS_IRREVERSIBLE", "EFFECT_CLASS_IRREVERSIBLE", "EFFECT_CLASS_IRREVERSIBLE"], "RISK_TIER_LOW")
	d.decision == "require_approval"
	d.required_approver_roles == ["authorizer"]
	d.required_approvals == 1
	d.reasons == ["the plan may make 4 irreversible calls, more than 3"]
}

# A revision that drops steps already run and adds new ones is weighed
# with the calls the task made outside it.
test_irreversible_calls_made_before_the_plan_count if {
	two := plan_input(["EFFECT_CLASS_IRREVERSIBLE", "EFFECT_CLASS_IRREVERSIBLE"], "RISK_TIER_LOW")
	d := plan.decision with input as object.union(two, {"task_calls": {"calls": 2, "effects": {"EFFECT_CLASS_IRREVERSIBLE": 2}}})
	d.decision == "require_approval"
	d.reasons == ["the plan may make 2 irreversible calls and the task has made or has under way 2 outside it: 4, more than 3"]
}

# Calls made before do not make a plan with no irreversible call of its
# own need a person.
test_earlier_calls_alone_ask_nothing if {
	reads := plan_input(["EFFECT_CLASS_READ"], "RISK_TIER_LOW")
	d := plan.decision with input as object.union(reads, {"task_calls": {"calls": 9, "effects": {"EFFECT_CLASS_IRREVERSIBLE": 9}}})
	d.decision == "allow"
}

test_a_foreach_counts_each_item if {
	i := plan_input(["EFFECT_CLASS_IRREVERSIBLE"], "RISK_TIER_LOW")
	d := plan.decision with input as object.union(i, {"counts": {"effects": {"EFFECT_CLASS_IRREVERSIBLE": 10}}})
	d.decision == "require_approval"
}

test_writes_in_a_high_risk_task_need_approval if {
	d := plan.decision with input as plan_input(["EFFECT_CLASS_READ", "EFFECT_CLASS_REVERSIBLE_WRITE"], "RISK_TIER_HIGH")
	d.decision == "require_approval"
	d.reasons == ["a plan that changes something in a RISK_TIER_HIGH task needs approval"]
}

test_reads_in_a_high_risk_task_are_allowed if {
	d := plan.decision with input as plan_input(["EFFECT_CLASS_READ"], "RISK_TIER_CRITICAL")
	d.decision == "allow"
	d.risk_tier == "RISK_TIER_CRITICAL"
}

test_an_unknown_effect_class_is_denied if {
	d := plan.decision with input as plan_input(["EFFECT_CLASS_READ", "EFFECT_CLASS_UNSPECIFIED"], "RISK_TIER_HIGH")
	d.decision == "deny"
	d.reasons == [`step "s1" calls tool "t", whose effect class EFFECT_CLASS_UNSPECIFIED this policy cannot judge`]
	d.required_approvals == 0
}

test_steps_without_tools_are_allowed if {
	d := plan.decision with input as {"steps": [{"id": "wait", "kind": "wait", "calls": 0, "tool": null}], "counts": {"effects": {}}}
	d.decision == "allow"
}
