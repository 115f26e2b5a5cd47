# Unit tests for model_decisions.rego; services/governance/decision_test.go
# runs them, and evaluates the bundle against inputs built from tasks.
package steward.policy_test

import data.steward.policy

write := {"effect_class": "EFFECT_CLASS_IDEMPOTENT_WRITE"}

read := {"effect_class": "EFFECT_CLASS_READ"}

decided(model, provenance, confidence) := {
	"model": {"provider": "openai", "model_id": model, "provenance": provenance},
	"confidence": confidence,
	"flags": [],
}

test_an_observed_sure_trusted_model_writes if {
	d := policy.decision with input as {"tool": write, "decision": decided("gpt-strong", "observed", 0.9)}
	d.decision == "allow"
}

test_low_confidence_asks_a_person if {
	d := policy.decision with input as {"tool": write, "decision": decided("gpt-strong", "observed", 0.4)}
	d.decision == "require_approval"
	d.reasons == ["the model's confidence 0.4 is below 0.7"]
}

test_a_reported_model_id_asks_a_person if {
	d := policy.decision with input as {"tool": write, "decision": decided("gpt-strong", "reported", 0.9)}
	d.decision == "require_approval"
	d.reasons == ["model gpt-strong is the agent's word, not a call Steward observed"]
}

test_an_untrusted_model_may_not_write if {
	d := policy.decision with input as {"tool": write, "decision": decided("gpt-small", "observed", 0.9)}
	d.decision == "deny"
}

test_flagged_context_asks_a_person if {
	flagged := object.union(decided("gpt-strong", "observed", 0.9), {"flags": ["context_expired"]})
	d := policy.decision with input as {"tool": write, "decision": flagged}
	d.reasons == ["the decision cites context flagged context_expired"]
}

test_a_write_without_a_decision_asks_a_person if {
	d := policy.decision with input as {"tool": write}
	d.decision == "require_approval"
}

test_reads_run if {
	d := policy.decision with input as {"tool": read}
	d.decision == "allow"
}
