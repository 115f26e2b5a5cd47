# Unit tests for pinned_inputs.rego; services/governance/context_test.go
# runs them, and evaluates the bundle against inputs built from contracts.
package steward.policy_test

import data.steward.policy

task(inputs, refs) := {
	"input_snapshot": {"version": "inputs-7", "inputs": inputs},
	"context_refs": refs,
}

pinned := {"uri": "postgres://warehouse/incidents", "version": "2026-11-30", "digest": "sha256:0f"}

unpinned := {"uri": "postgres://warehouse/incidents", "version": "2026-11-30", "digest": ""}

kb := {"uri": "s3://kb/runbooks/oncall.md", "version": "v12", "digest": ""}

wiki := {"uri": "https://wiki.example/oncall", "version": "", "digest": ""}

write := {"effect_class": "EFFECT_CLASS_IDEMPOTENT_WRITE"}

read := {"effect_class": "EFFECT_CLASS_READ"}

test_pinned_write_from_the_knowledge_base_is_allowed if {
	d := policy.decision with input as {"task": task([pinned], [kb]), "tool": write}
	d.decision == "allow"
}

test_write_on_an_unpinned_input_is_denied if {
	d := policy.decision with input as {"task": task([pinned, unpinned], [kb]), "tool": write}
	d.decision == "deny"
	d.reasons == ["input postgres://warehouse/incidents is not pinned by a digest, and this write would act on it"]
}

test_read_of_an_unpinned_input_is_allowed if {
	d := policy.decision with input as {"task": task([unpinned], []), "tool": read}
	d.decision == "allow"
}

test_context_from_elsewhere_needs_a_person if {
	d := policy.decision with input as {"task": task([pinned], [kb, wiki]), "tool": read}
	d.decision == "require_approval"
	d.reasons == ["context https://wiki.example/oncall is not from the knowledge base"]
}

test_a_task_without_context_or_inputs_is_allowed if {
	d := policy.decision with input as {"task": {}, "tool": write}
	d.decision == "allow"
}
