# Unit tests for steward.rego: one test per branch, plus the precedence and
# risk-tier rules. CI runs them through policy_test.go (TestDefaultBundleRegoTests).
package steward.policy_test

import data.steward.policy

# facts builds an input for tool "t" that the task allows, overriding the
# tool contract's fields with tool and the contract's risk tier with tier.
facts(tool, tier) := {
	"task": {"task_id": "task-1", "allowed_tools": ["t"], "risk_tier": tier},
	"tool": object.union(
		{
			"name": "t",
			"version": "1",
			"effect_class": "EFFECT_CLASS_READ",
			"data_sensitivity": "DATA_SENSITIVITY_INTERNAL",
			"default_approval": "APPROVAL_RULE_POLICY",
		},
		tool,
	),
	"action": {"action_id": "a-1", "tool": "t", "tool_version": "1", "rationale": argued},
	"credential": {},
	"risk": {"contract_risk_tier": tier},
}

low(tool) := facts(tool, "RISK_TIER_LOW")

# argued is a proposer's full rationale: what a high-risk change needs.
argued := {
	"expected_impact": "moves 120 EUR to account 42",
	"rollback_plan": "none: ask the payee to send it back",
	"evidence": ["ticket:7"],
	"alternatives": [],
}

# with_rationale is input i with its action's rationale replaced by r.
# (object.union merges objects, so the old one is removed first.)
with_rationale(i, r) := object.union(object.remove(i, ["action"]), {"action": object.union(object.remove(i.action, ["rationale"]), {"rationale": r})})

approval_by_authorizer(d) if {
	d.decision == "require_approval"
	d.required_approver_roles == ["authorizer"]
}

# --- allow ------------------------------------------------------------------

test_read_is_allowed if {
	d := policy.decision with input as low({})
	d.decision == "allow"
	d.risk_tier == "RISK_TIER_LOW"
	d.required_approver_roles == []
	d.reasons == ["reads change nothing"]
}

test_idempotent_write_is_allowed if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_IDEMPOTENT_WRITE"})
	d.decision == "allow"
	d.risk_tier == "RISK_TIER_MEDIUM"
}

test_reversible_write_is_allowed if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_REVERSIBLE_WRITE"})
	d.decision == "allow"
	d.risk_tier == "RISK_TIER_MEDIUM"
}

test_confidential_read_is_allowed if {
	d := policy.decision with input as low({"data_sensitivity": "DATA_SENSITIVITY_CONFIDENTIAL"})
	d.decision == "allow"
}

# --- require approval ---------------------------------------------------------

test_always_approval_rule_requires_authorizer if {
	d := policy.decision with input as low({"default_approval": "APPROVAL_RULE_ALWAYS"})
	approval_by_authorizer(d)
	d.reasons == [`tool "t" always requires approval (APPROVAL_RULE_ALWAYS)`]
}

test_irreversible_requires_approval if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_IRREVERSIBLE"})
	approval_by_authorizer(d)
	d.risk_tier == "RISK_TIER_HIGH"
	d.reasons == ["irreversible actions require approval"]
}

test_unknown_sensitivity_requires_approval if {
	every sensitivity in ["DATA_SENSITIVITY_UNSPECIFIED", "DATA_SENSITIVITY_RESTRICTD"] {
		d := policy.decision with input as low({"data_sensitivity": sensitivity})
		approval_by_authorizer(d)
		d.reasons == [`tool "t" does not say how sensitive its data is`]
	}
}

test_restricted_read_requires_approval if {
	d := policy.decision with input as low({"data_sensitivity": "DATA_SENSITIVITY_RESTRICTED"})
	approval_by_authorizer(d)
	d.reasons == ["tools touching restricted data require approval"]
}

test_write_to_confidential_data_requires_approval if {
	every effect in ["EFFECT_CLASS_IDEMPOTENT_WRITE", "EFFECT_CLASS_REVERSIBLE_WRITE"] {
		d := policy.decision with input as low({"effect_class": effect, "data_sensitivity": "DATA_SENSITIVITY_CONFIDENTIAL"})
		approval_by_authorizer(d)
		d.reasons == ["writes to DATA_SENSITIVITY_CONFIDENTIAL data require approval"]
	}
}

test_write_to_restricted_data_requires_approval if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_REVERSIBLE_WRITE", "data_sensitivity": "DATA_SENSITIVITY_RESTRICTED"})
	approval_by_authorizer(d)
	"writes to DATA_SENSITIVITY_RESTRICTED data require approval" in d.reasons
	"tools touching restricted data require approval" in d.reasons
}

test_write_in_high_risk_task_requires_approval if {
	d := policy.decision with input as facts({"effect_class": "EFFECT_CLASS_IDEMPOTENT_WRITE"}, "RISK_TIER_HIGH")
	approval_by_authorizer(d)
	d.risk_tier == "RISK_TIER_HIGH"
	d.reasons == ["writes in a RISK_TIER_HIGH task require approval"]
}

test_write_in_critical_task_requires_approval if {
	d := policy.decision with input as facts({"effect_class": "EFFECT_CLASS_REVERSIBLE_WRITE"}, "RISK_TIER_CRITICAL")
	approval_by_authorizer(d)
	d.risk_tier == "RISK_TIER_CRITICAL"
}

test_write_in_medium_risk_task_is_allowed if {
	d := policy.decision with input as facts({"effect_class": "EFFECT_CLASS_REVERSIBLE_WRITE"}, "RISK_TIER_MEDIUM")
	d.decision == "allow"
}

# --- deny ---------------------------------------------------------------------

test_tool_not_in_contract_is_denied if {
	d := policy.decision with input as object.union(low({}), {"task": {"allowed_tools": ["other"]}})
	d.decision == "deny"
	d.required_approver_roles == []
	d.reasons == [`tool "t" is not allowed by the task contract`]
}

# A pin (name@version) allows its version and no other.
test_pinned_tool_allows_its_version if {
	d := policy.decision with input as object.union(low({}), {"task": {"allowed_tools": ["t@1"]}})
	d.decision == "allow"
}

test_pinned_tool_denies_another_version if {
	d := policy.decision with input as object.union(low({}), {"task": {"allowed_tools": ["t@2"]}})
	d.decision == "deny"
	d.reasons == [`tool "t" is not allowed by the task contract`]
}

# protojson omits an empty list, so "no allowed_tools" arrives as no field.
test_missing_allowed_tools_is_denied if {
	d := policy.decision with input as object.remove(low({}), ["task"])
	d.decision == "deny"
	d.reasons == [`tool "t" is not allowed by the task contract`]
}

test_tool_contract_for_another_tool_is_denied if {
	d := policy.decision with input as low({"name": "u"})
	d.decision == "deny"
	d.reasons == [`action names tool "t" but the tool contract is for "u"`]
}

test_unspecified_effect_class_is_denied if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_UNSPECIFIED"})
	d.decision == "deny"
	d.risk_tier == "RISK_TIER_HIGH"
	d.reasons == [`tool "t" has effect class EFFECT_CLASS_UNSPECIFIED, which this policy cannot judge`]
}

# protojson omits a zero enum: a missing effect class is UNSPECIFIED.
test_missing_effect_class_is_denied if {
	d := policy.decision with input as json.remove(low({}), ["tool/effect_class"])
	d.decision == "deny"
	d.reasons == [`tool "t" has effect class EFFECT_CLASS_UNSPECIFIED, which this policy cannot judge`]
}

test_unknown_effect_class_is_denied if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_TELEPORT"})
	d.decision == "deny"
}

test_empty_input_is_denied if {
	d := policy.decision with input as {}
	d.decision == "deny"
	count(d.reasons) > 0
}

# --- precedence ---------------------------------------------------------------

test_deny_wins_over_approval if {
	i := low({"effect_class": "EFFECT_CLASS_IRREVERSIBLE", "default_approval": "APPROVAL_RULE_ALWAYS"})
	d := policy.decision with input as object.union(i, {"task": {"allowed_tools": []}})
	d.decision == "deny"
	d.required_approver_roles == []
	d.reasons == [`tool "t" is not allowed by the task contract`]
}

test_approval_wins_over_allow if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_READ", "data_sensitivity": "DATA_SENSITIVITY_RESTRICTED"})
	d.decision == "require_approval"
	not "reads change nothing" in d.reasons
}

test_approval_reasons_accumulate if {
	d := policy.decision with input as low({
		"effect_class": "EFFECT_CLASS_IRREVERSIBLE",
		"default_approval": "APPROVAL_RULE_ALWAYS",
		"data_sensitivity": "DATA_SENSITIVITY_RESTRICTED",
	})
	approval_by_authorizer(d)
	count(d.reasons) == 3
}

# --- risk tier ----------------------------------------------------------------

test_risk_tier_is_contract_tier_when_higher if {
	d := policy.decision with input as facts({}, "RISK_TIER_CRITICAL")
	d.decision == "allow" # a read stays allowed; only its recorded tier rises
	d.risk_tier == "RISK_TIER_CRITICAL"
}

test_risk_tier_is_effect_tier_when_higher if {
	d := policy.decision with input as facts({"effect_class": "EFFECT_CLASS_IRREVERSIBLE"}, "RISK_TIER_MEDIUM")
	d.risk_tier == "RISK_TIER_HIGH"
}

test_risk_tier_without_contract_tier_comes_from_effect if {
	d := policy.decision with input as json.remove(low({}), ["risk", "task/risk_tier"])
	d.decision == "allow"
	d.risk_tier == "RISK_TIER_LOW"
}

test_risk_tier_falls_back_to_task if {
	d := policy.decision with input as object.remove(facts({}, "RISK_TIER_HIGH"), ["risk"])
	d.risk_tier == "RISK_TIER_HIGH"
}

test_unknown_contract_risk_tier_counts_as_critical if {
	d := policy.decision with input as facts({}, "RISK_TIER_SOMEWHAT")
	d.risk_tier == "RISK_TIER_CRITICAL"
}

# --- the proposer's rationale ------------------------------------------------

test_high_risk_change_without_rationale_is_denied if {
	i := with_rationale(low({"effect_class": "EFFECT_CLASS_IRREVERSIBLE"}), {})
	d := policy.decision with input as i
	d.decision == "deny"
	d.required_approvals == 0
	d.reasons == ["RISK_TIER_HIGH actions that change something need the proposer's expected impact and rollback plan: missing rationale.expected_impact, rationale.rollback_plan"]
}

# protojson-shaped input: every field present, empty.
test_empty_rationale_fields_are_missing if {
	i := with_rationale(facts({"effect_class": "EFFECT_CLASS_IDEMPOTENT_WRITE"}, "RISK_TIER_CRITICAL"), {"expected_impact": "", "rollback_plan": "  ", "evidence": [], "alternatives": []})
	d := policy.decision with input as i
	d.decision == "deny"
	d.reasons == ["RISK_TIER_CRITICAL actions that change something need the proposer's expected impact and rollback plan: missing rationale.expected_impact, rationale.rollback_plan"]
}

test_partial_rationale_names_what_is_missing if {
	i := with_rationale(low({"effect_class": "EFFECT_CLASS_IRREVERSIBLE"}), {"expected_impact": "moves money"})
	d := policy.decision with input as i
	d.decision == "deny"
	d.reasons == ["RISK_TIER_HIGH actions that change something need the proposer's expected impact and rollback plan: missing rationale.rollback_plan"]
}

test_high_risk_change_with_rationale_goes_to_approval if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_IRREVERSIBLE"})
	approval_by_authorizer(d)
}

test_medium_risk_change_needs_no_rationale if {
	d := policy.decision with input as with_rationale(low({"effect_class": "EFFECT_CLASS_REVERSIBLE_WRITE"}), {})
	d.decision == "allow"
}

test_read_in_critical_task_needs_no_rationale if {
	d := policy.decision with input as with_rationale(facts({}, "RISK_TIER_CRITICAL"), {})
	d.decision == "allow"
}

test_compensation_needs_no_rationale if {
	i := with_rationale(facts({"effect_class": "EFFECT_CLASS_REVERSIBLE_WRITE"}, "RISK_TIER_HIGH"), {})
	d := policy.decision with input as object.union(i, {"action": object.union(i.action, {"compensates": "a-0"})})
	approval_by_authorizer(d)
}

# --- how many approvers -------------------------------------------------------

test_one_approver_by_default if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_IRREVERSIBLE"})
	d.required_approvals == 1
}

test_required_approvals_is_the_most_any_rule_asks if {
	d := policy.decision with input as low({"effect_class": "EFFECT_CLASS_IRREVERSIBLE"})
		with policy.approvals_needed as {1, 3, 2}
	d.required_approvals == 3
}

test_no_approvers_without_approval if {
	d := policy.decision with input as low({}) with policy.approvals_needed as {1, 2}
	d.decision == "allow"
	d.required_approvals == 0
}
