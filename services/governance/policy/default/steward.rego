# Steward's default action policy.
#
# The engine queries data.steward.policy.decision for every proposed action.
# Rules below only collect reasons into three sets; one place at the bottom
# turns them into a decision, so precedence is written down once:
#
#     deny  >  require_approval  >  allow  >  (nothing said: deny)
#
# Adding a rule therefore never weakens another: a new deny reason always
# wins, and a new allow reason can never override an approval or a deny.
package steward.policy

# ---------------------------------------------------------------------------
# Facts read from the input.
#
# The governance plane renders protos with protojson, which omits fields at
# their zero value: an UNSPECIFIED enum or an empty list is absent, not "".
# Every fact therefore has an explicit default, so a missing field takes the
# most cautious branch instead of making a rule silently undefined.
# ---------------------------------------------------------------------------

tool_name := object.get(input, ["action", "tool"], "")

tool_version := object.get(input, ["action", "tool_version"], "")

effect_class := object.get(input, ["tool", "effect_class"], "EFFECT_CLASS_UNSPECIFIED")

data_sensitivity := object.get(input, ["tool", "data_sensitivity"], "DATA_SENSITIVITY_UNSPECIFIED")

default_approval := object.get(input, ["tool", "default_approval"], "APPROVAL_RULE_UNSPECIFIED")

# The plane puts the contract's tier under input.risk; fall back to the task
# itself so the policy still works for inputs built by hand.
contract_risk_tier := object.get(
	input, ["risk", "contract_risk_tier"],
	object.get(input, ["task", "risk_tier"], "RISK_TIER_UNSPECIFIED"),
)

write_effects := {"EFFECT_CLASS_IDEMPOTENT_WRITE", "EFFECT_CLASS_REVERSIBLE_WRITE"}

changing_effects := write_effects | {"EFFECT_CLASS_IRREVERSIBLE"}

sensitive_data := {"DATA_SENSITIVITY_CONFIDENTIAL", "DATA_SENSITIVITY_RESTRICTED"}

high_risk_tiers := {"RISK_TIER_HIGH", "RISK_TIER_CRITICAL"}

# ---------------------------------------------------------------------------
# Deny: the action may not run, whoever approves it.
# ---------------------------------------------------------------------------

# The task contract is the outer bound of what an agent may do; approval
# cannot widen it (that would need a new contract, not a click).
deny_reasons contains sprintf("tool %q is not allowed by the task contract", [tool_name]) if {
	not tool_allowed
}

# An entry is a bare name, which allows any version, or name@version, a
# pin, which allows that version only.
tool_allowed if tool_name in object.get(input, ["task", "allowed_tools"], [])

tool_allowed if sprintf("%s@%s", [tool_name, tool_version]) in object.get(input, ["task", "allowed_tools"], [])

# The tool contract must be the one the action names; otherwise every other
# rule would be judging the wrong tool.
deny_reasons contains sprintf("action names tool %q but the tool contract is for %q", [tool_name, contract_name]) if {
	contract_name := object.get(input, ["tool", "name"], "")
	contract_name != tool_name
}

# Without a known effect class nobody can say what the call changes, so no
# rule below can vouch for it and nobody can approve it knowingly.
deny_reasons contains sprintf("tool %q has effect class %s, which this policy cannot judge", [tool_name, effect_class]) if {
	not known_effect_classes[effect_class]
}

# A change at a high risk tier is argued for before anyone weighs it: the
# proposer says what it will do and how it would be undone
# (ProposeActionRequest.rationale), which approvers then read. A read
# changes nothing and has nothing to roll back; a compensation is Steward's
# own undoing of a write, never held back. (An unknown effect class is
# denied above already.)
deny_reasons contains sprintf("%s actions that change something need the proposer's expected impact and rollback plan: missing %s", [risk_tier, concat(", ", missing_rationale)]) if {
	changing_effects[effect_class]
	high_risk_tiers[risk_tier]
	not compensation
	count(missing_rationale) > 0
}

compensation if object.get(input, ["action", "compensates"], "") != ""

# missing_rationale lists, in order, the required parts of the rationale
# the proposer left empty.
missing_rationale := [sprintf("rationale.%s", [field]) |
	some field in ["expected_impact", "rollback_plan"]
	trim_space(object.get(input, ["action", "rationale", field], "")) == ""
]

known_effect_classes := {
	"EFFECT_CLASS_READ",
	"EFFECT_CLASS_IDEMPOTENT_WRITE",
	"EFFECT_CLASS_REVERSIBLE_WRITE",
	"EFFECT_CLASS_IRREVERSIBLE",
}

# ---------------------------------------------------------------------------
# Require approval: the action may run once a person says so.
# ---------------------------------------------------------------------------

# The tool's own contract can insist on a person, whatever its effect class.
approval_reasons contains sprintf("tool %q always requires approval (APPROVAL_RULE_ALWAYS)", [tool_name]) if {
	default_approval == "APPROVAL_RULE_ALWAYS"
}

# Nothing can undo it, so a person has to own it before it happens.
approval_reasons contains "irreversible actions require approval" if {
	effect_class == "EFFECT_CLASS_IRREVERSIBLE"
}

# Restricted data needs a person even to read: reading is how it leaks.
approval_reasons contains "tools touching restricted data require approval" if {
	data_sensitivity == "DATA_SENSITIVITY_RESTRICTED"
}

# A tool that does not say how sensitive its data is (one registered before
# contracts had to) is not taken for the mildest: a person decides.
approval_reasons contains sprintf("tool %q does not say how sensitive its data is", [tool_name]) if {
	not known_sensitivities[data_sensitivity]
}

known_sensitivities := {
	"DATA_SENSITIVITY_PUBLIC",
	"DATA_SENSITIVITY_INTERNAL",
	"DATA_SENSITIVITY_CONFIDENTIAL",
	"DATA_SENSITIVITY_RESTRICTED",
}

# Writes are allowed on their own, but not to sensitive data ...
approval_reasons contains sprintf("writes to %s data require approval", [data_sensitivity]) if {
	write_effects[effect_class]
	sensitive_data[data_sensitivity]
}

# ... nor inside a task its contract already rates as high risk.
approval_reasons contains sprintf("writes in a %s task require approval", [contract_risk_tier]) if {
	write_effects[effect_class]
	high_risk_tiers[contract_risk_tier]
}

# Every approval rule above asks the task's authorizer, the person who
# answers for what the task does. A bundle that needs, say, a security
# reviewer for restricted data adds that role here.
required_approver_roles contains "authorizer" if count(approval_reasons) > 0

# How many distinct people holding those roles must approve: the most any
# rule asks for, one when none asks for more. A bundle that wants two
# people for, say, payments adds
#
#     approvals_needed contains 2 if tool_name == "payments.send"
#
# (the engine refuses more than 5).
approvals_needed contains 1

# ---------------------------------------------------------------------------
# Allow: what may run without a person, unless a rule above objects.
# ---------------------------------------------------------------------------

allow_reasons contains "reads change nothing" if {
	effect_class == "EFFECT_CLASS_READ"
}

allow_reasons contains "the write is idempotent or can be compensated" if {
	write_effects[effect_class]
}

# ---------------------------------------------------------------------------
# Risk tier: the higher of what the contract says and what the effect class
# implies, so a low-risk contract cannot talk down an irreversible call.
# ---------------------------------------------------------------------------

risk_tiers := ["RISK_TIER_UNSPECIFIED", "RISK_TIER_LOW", "RISK_TIER_MEDIUM", "RISK_TIER_HIGH", "RISK_TIER_CRITICAL"]

risk_rank(tier) := i if {
	risk_tiers[i] == tier
} else := 4 # An unknown tier is treated as the worst, not ignored.

effect_risk_tier := "RISK_TIER_LOW" if {
	effect_class == "EFFECT_CLASS_READ"
} else := "RISK_TIER_MEDIUM" if {
	write_effects[effect_class]
} else := "RISK_TIER_HIGH" # Irreversible, or unknown and so possibly irreversible.

risk_tier := risk_tiers[max({risk_rank(contract_risk_tier), risk_rank(effect_risk_tier)})]

# ---------------------------------------------------------------------------
# The decision the engine reads. Precedence lives here and only here.
# ---------------------------------------------------------------------------

outcome := "deny" if {
	count(deny_reasons) > 0
} else := "require_approval" if {
	count(approval_reasons) > 0
} else := "allow" if {
	count(allow_reasons) > 0
} else := "deny"

reasons := sort(deny_reasons) if {
	outcome == "deny"
	count(deny_reasons) > 0
} else := ["no rule allows this action"] if {
	outcome == "deny"
} else := sort(approval_reasons) if {
	outcome == "require_approval"
} else := sort(allow_reasons)

decision := {
	"decision": outcome,
	"risk_tier": risk_tier,
	"required_approver_roles": roles,
	"required_approvals": approvals,
	"reasons": reasons,
}

# Roles, and how many approvers, only mean something when a person is
# asked.
roles := sort(required_approver_roles) if outcome == "require_approval" else := []

approvals := max(approvals_needed) if outcome == "require_approval" else := 0
