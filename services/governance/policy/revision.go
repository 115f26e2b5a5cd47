package policy

import "context"

// NoRevisionRule is the reason of the allow EvaluateRevision gives under a
// bundle with no revision rule.
const NoRevisionRule = "the policy bundle has no revision rule (data.steward.revision.decision): the accountable owner's approval is enough"

// EvaluateRevision evaluates data.steward.revision.decision over input,
// the document describing one proposed revision of a task's contract
// (docs/revisions.md). A bundle with no module in package
// steward.revision allows every revision, with the reason
// NoRevisionRule: the accountable owner still approves each, and every
// action under the new version is judged by the action query. A bundle
// that has the package but gives no usable decision is read as a deny.
func (e *Engine) EvaluateRevision(ctx context.Context, input map[string]any) (Result, error) {
	b := e.current.Load()
	if !b.hasRevisionRule {
		return b.withSources(Result{Decision: Allow, Reasons: []string{NoRevisionRule}, Revision: b.revision}), nil
	}
	return b.decide(ctx, b.revisionQuery, revisionQuery, inputOption(input))
}
