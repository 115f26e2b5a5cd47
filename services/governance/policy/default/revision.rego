# Steward's default policy for revisions of a task's contract.
#
# The engine queries data.steward.revision.decision once for each revision
# proposed (TaskService.ReviseContract, docs/revisions.md), before it can
# take effect. The accountable owner approves every revision whatever this
# says; this decides whether a holder of a role must approve it too, or
# whether it may not take effect at all. Precedence:
#
#     deny  >  require_approval  >  allow
package steward.revision

# ---------------------------------------------------------------------------
# Facts read from the input: input.task is the contract in force,
# input.contract the revised one, input.revision the revision's version,
# hash, proposer and the fields it changes (input.revision.changed).
# ---------------------------------------------------------------------------

contract_risk_tier := object.get(
	input, ["risk", "contract_risk_tier"],
	object.get(input, ["task", "risk_tier"], "RISK_TIER_UNSPECIFIED"),
)

high_risk_tiers := {"RISK_TIER_HIGH", "RISK_TIER_CRITICAL"}

changed := {f | some f in object.get(input, ["revision", "changed"], [])}

criteria_before := count(object.get(input, ["task", "acceptance_criteria"], []))

criteria_after := count(object.get(input, ["contract", "acceptance_criteria"], []))

# ---------------------------------------------------------------------------
# Deny: the revision may not take effect, whoever approves it.
# ---------------------------------------------------------------------------

# A high-risk task keeps its checks on its result: a revision may change
# its criteria, not drop any.
deny_reasons contains sprintf("a revision may not drop acceptance criteria of a %s task: it has %d, the revision %d", [contract_risk_tier, criteria_before, criteria_after]) if {
	high_risk_tiers[contract_risk_tier]
	criteria_after < criteria_before
}

# ---------------------------------------------------------------------------
# Require a role's approval besides the owner's.
# ---------------------------------------------------------------------------

# In a task its contract rates as high risk, changing what it is for or
# what counts as done is owned by an authorizer too: the owner alone could
# move the goalposts of work already approved.
approval_reasons contains sprintf("a revision of %s in a %s task needs an authorizer's approval as well as the owner's", [concat(", ", sort([f | some f in changed])), contract_risk_tier]) if {
	high_risk_tiers[contract_risk_tier]
	count(changed) > 0
}

required_approver_roles contains "authorizer" if count(approval_reasons) > 0

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
} else := ["no revision rule objects; the accountable owner's approval is enough"]

decision := {
	"decision": outcome,
	"risk_tier": contract_risk_tier,
	"required_approver_roles": roles,
	"required_approvals": approvals,
	"reasons": reasons,
}

roles := sort(required_approver_roles) if outcome == "require_approval" else := []

approvals := 1 if outcome == "require_approval" else := 0
