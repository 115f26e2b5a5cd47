# An example bundle: a policy that reads what a task was given to work from.
#
# The governance plane puts the whole task contract under input.task, so a
# policy reads the contract's context refs and inputs (docs/contract.md,
# "Context and inputs") like any other fact:
#
#     input.task.context_refs                 [{uri, version, digest}, …]
#     input.task.input_snapshot.version       "inputs-7"
#     input.task.input_snapshot.inputs        [{uri, version, digest}, …]
#
# This bundle allows reads; a write only when every input the task started
# from is pinned by a digest (otherwise nobody can say afterwards what it
# acted on), and it asks a person when the task was given context from
# outside the knowledge base. Copy the rules you need into your own bundle
# (see services/governance/policy/default/steward.rego for the full one).
package steward.policy

inputs := object.get(input, ["task", "input_snapshot", "inputs"], [])

context_refs := object.get(input, ["task", "context_refs"], [])

effect_class := object.get(input, ["tool", "effect_class"], "EFFECT_CLASS_UNSPECIFIED")

# Where trusted context lives.
knowledge_base := "s3://kb/"

deny_reasons contains sprintf("input %s is not pinned by a digest, and this write would act on it", [ref.uri]) if {
	effect_class != "EFFECT_CLASS_READ"
	some ref in inputs
	object.get(ref, "digest", "") == ""
}

approval_reasons contains sprintf("context %s is not from the knowledge base", [ref.uri]) if {
	some ref in context_refs
	not startswith(ref.uri, knowledge_base)
}

decision := {"decision": "deny", "reasons": sort(deny_reasons)} if {
	count(deny_reasons) > 0
} else := {
	"decision": "require_approval",
	"required_approver_roles": ["authorizer"],
	"reasons": sort(approval_reasons),
} if {
	count(approval_reasons) > 0
} else := {"decision": "allow", "reasons": ["every input is pinned and every piece of context is from the knowledge base"]}
