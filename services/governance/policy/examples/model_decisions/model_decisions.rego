# An example bundle: a policy that weighs the model decision behind an
# action (docs/decisions.md).
#
# When a proposal names the decision that produced it (decision_id), the
# governance plane puts what it knows of that decision under
# input.decision:
#
#     input.decision.model          {provider, model_id, provenance}
#     input.decision.confidence     0.42 (absent when the model stated none)
#     input.decision.versions       {prompt_template_id, prompt_version, policy_revision, code_version, provenance}
#     input.decision.context        [{context_id, source, owner_ref, sensitivity, egress}, …]
#     input.decision.flags          ["context_expired", "context_egress", …]
#
# provenance is "observed" when Steward made the model call itself and saw
# which model answered, "reported" when the agent only says so.
#
# This bundle lets reads run. A write runs only when it comes from a
# decision of a model it trusts, and a person is asked when the model was
# not sure of itself, when the model id is only the agent's word, when the
# decision drew on context flagged as expired or not allowed to go to that
# model, or when no decision is named at all. Copy the rules you need into
# your own bundle (services/governance/policy/default/steward.rego holds
# the full one).
package steward.policy

effect_class := object.get(input, ["tool", "effect_class"], "EFFECT_CLASS_UNSPECIFIED")

writes if effect_class != "EFFECT_CLASS_READ"

# The models this policy lets write, and the confidence below which a
# person looks first.
trusted_models := {"gpt-strong"}

min_confidence := 0.7

deny_reasons contains sprintf("model %s is not one this policy lets write", [m]) if {
	writes
	m := input.decision.model.model_id
	not trusted_models[m]
}

approval_reasons contains sprintf("the model's confidence %v is below %v", [c, min_confidence]) if {
	c := input.decision.confidence
	c < min_confidence
}

approval_reasons contains sprintf("model %s is the agent's word, not a call Steward observed", [input.decision.model.model_id]) if {
	writes
	input.decision.model.provenance == "reported"
}

approval_reasons contains sprintf("the decision cites context flagged %s", [f]) if {
	some f in input.decision.flags
}

approval_reasons contains "the write names no model decision" if {
	writes
	not input.decision
}

decision := {"decision": "deny", "reasons": sort(deny_reasons)} if {
	count(deny_reasons) > 0
} else := {
	"decision": "require_approval",
	"required_approver_roles": ["authorizer"],
	"reasons": sort(approval_reasons),
} if {
	count(approval_reasons) > 0
} else := {"decision": "allow", "reasons": ["a trusted model decided it, observed by Steward, sure of itself, from clean context"]}
