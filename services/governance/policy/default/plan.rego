# Steward's default plan policy.
#
# The engine queries data.steward.plan.decision once for each plan version
# the control plane accepts, before any step of it runs (docs/plans.md,
# "Plan policy"). It judges the plan as a whole: what no single step shows,
# such as how many irreversible calls the plan may make in all. It does not
# replace the action policy (steward.rego): each step's action is still
# evaluated on its own when it runs, and may still be denied or need its own
# approval. Precedence, as there:
#
#     deny  >  require_approval  >  allow
#
# Unlike an action, a plan that no rule objects to is allowed: its steps
# are judged again one by one.
package steward.plan

# ---------------------------------------------------------------------------
# Facts read from the input. input.steps has one entry per step, with the
# tool its action calls (null for a step that calls none) and calls, the
# most calls it can make (a foreach's max_items); input.counts adds them
# up, calls by effect class under counts.effects. input.task_calls counts
# the task's calls outside this version's steps the same way: its agent's
# own, and those of steps earlier versions had.
# ---------------------------------------------------------------------------

contract_risk_tier := object.get(
	input, ["risk", "contract_risk_tier"],
	object.get(input, ["task", "risk_tier"], "RISK_TIER_UNSPECIFIED"),
)

effect_calls(class) := object.get(input, ["counts", "effects", class], 0)

irreversible_calls := effect_calls("EFFECT_CLASS_IRREVERSIBLE")

# Irreversible calls the task made, or has under way, outside this plan
# version: a revision that drops steps already run and adds new ones is
# weighed with them.
earlier_irreversible_calls := object.get(input, ["task_calls", "effects", "EFFECT_CLASS_IRREVERSIBLE"], 0)

changing_calls := sum([effect_calls(c) | some c in changing_effects])

changing_effects := {"EFFECT_CLASS_IDEMPOTENT_WRITE", "EFFECT_CLASS_REVERSIBLE_WRITE", "EFFECT_CLASS_IRREVERSIBLE"}

known_effect_classes := changing_effects | {"EFFECT_CLASS_READ"}

high_risk_tiers := {"RISK_TIER_HIGH", "RISK_TIER_CRITICAL"}

# More irreversible calls than this, in one plan and the task's calls
# before it, need a person to own the whole plan before its first step:
# each such call asks its own approval too, but a person approving them
# one by one never sees how many follow.
max_irreversible_calls := 3

# ---------------------------------------------------------------------------
# Deny: the plan may not start, whoever approves it.
# ---------------------------------------------------------------------------

# Nobody can say what a call of a tool with no known effect class changes
# (an unregistered tool, which validation refuses already), so nobody can
# weigh the plan.
deny_reasons contains sprintf("step %q calls tool %q, whose effect class %s this policy cannot judge", [step.id, tool_name(step), effect_class(step)]) if {
	some step in object.get(input, ["steps"], [])
	step.tool != null
	not known_effect_classes[effect_class(step)]
}

tool_name(step) := object.get(step, ["tool", "name"], "")

effect_class(step) := object.get(step, ["tool", "effect_class"], "EFFECT_CLASS_UNSPECIFIED")

# ---------------------------------------------------------------------------
# Require approval of the whole plan, bound to its hash.
# ---------------------------------------------------------------------------

approval_reasons contains sprintf("the plan may make %d irreversible calls, more than %d", [irreversible_calls, max_irreversible_calls]) if {
	earlier_irreversible_calls == 0
	irreversible_calls > max_irreversible_calls
}

approval_reasons contains sprintf("the plan may make %d irreversible calls and the task has made or has under way %d outside it: %d, more than %d", [irreversible_calls, earlier_irreversible_calls, irreversible_calls + earlier_irreversible_calls, max_irreversible_calls]) if {
	earlier_irreversible_calls > 0
	irreversible_calls > 0
	irreversible_calls + earlier_irreversible_calls > max_irreversible_calls
}

# In a task its contract rates as high risk, a plan that changes anything
# is owned by a person before it starts.
approval_reasons contains sprintf("a plan that changes something in a %s task needs approval", [contract_risk_tier]) if {
	high_risk_tiers[contract_risk_tier]
	changing_calls > 0
}

required_approver_roles contains "authorizer" if count(approval_reasons) > 0

# ---------------------------------------------------------------------------
# Risk tier: the contract's, raised by the worst call the plan may make.
# ---------------------------------------------------------------------------

risk_tiers := ["RISK_TIER_UNSPECIFIED", "RISK_TIER_LOW", "RISK_TIER_MEDIUM", "RISK_TIER_HIGH", "RISK_TIER_CRITICAL"]

risk_rank(tier) := i if {
	risk_tiers[i] == tier
} else := 4

plan_risk_tier := "RISK_TIER_HIGH" if {
	irreversible_calls > 0
} else := "RISK_TIER_MEDIUM" if {
	changing_calls > 0
} else := "RISK_TIER_LOW"

risk_tier := risk_tiers[max({risk_rank(contract_risk_tier), risk_rank(plan_risk_tier)})]

# ---------------------------------------------------------------------------
# The decision the engine reads.
# ---------------------------------------------------------------------------

outcome := "deny" if {
	count(deny_reasons) > 0
} else := "require_approval" if {
	count(approval_reasons) > 0
} else := "allow"

reasons := sort(deny_reasons) if {
	outcome == "deny"
} else := sort(approval_reasons) if {
	outcome == "require_approval"
} else := ["no plan rule objects; each step is judged on its own when it runs"]

decision := {
	"decision": outcome,
	"risk_tier": risk_tier,
	"required_approver_roles": roles,
	"required_approvals": approvals,
	"reasons": reasons,
}

roles := sort(required_approver_roles) if outcome == "require_approval" else := []

approvals := 1 if outcome == "require_approval" else := 0
