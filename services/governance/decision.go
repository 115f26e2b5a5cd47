package governance

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// decisionFacts is what policy sees of the model decision behind an
// action (input.decision, docs/decisions.md): which model made it and
// whether Steward saw the call or the agent only says so, its confidence
// (absent when the model stated none), the versions in force, the
// context it cited with where each item may go and whether it had
// expired, and the flags found when it was recorded. A rule may then ask
// for a person when confidence is low, refuse a model the tier does not
// allow, or trust an observed model id and not a reported one.
func decisionFacts(t *stewardv1.Task, d *stewardv1.Decision) map[string]any {
	c, v := d.GetCall(), d.GetVersions()
	facts := map[string]any{
		"decision_id": validUTF8(d.DecisionId),
		"model": map[string]any{
			"provider":   validUTF8(c.GetProvider()),
			"model_id":   validUTF8(c.GetModelId()),
			"provenance": provenanceFact(c.GetProvenance()),
		},
		"versions": map[string]any{
			"prompt_template_id": validUTF8(v.GetPromptTemplateId()),
			"prompt_version":     validUTF8(v.GetPromptVersion()),
			"policy_revision":    validUTF8(v.GetPolicyRevision()),
			"code_version":       validUTF8(v.GetCodeVersion()),
			"provenance":         provenanceFact(v.GetProvenance()),
		},
		"rationale": validUTF8(d.Rationale),
		"context":   contextFacts(t, d),
		"flags":     flagFacts(d.Flags),
	}
	if d.Confidence != nil {
		facts["confidence"] = json.Number(strconv.FormatFloat(d.GetConfidence(), 'g', -1, 64))
	}
	return facts
}

// provenanceFact names a provenance as policy reads it: "reported" or
// "observed" ("" when unset, which no recorded decision is).
func provenanceFact(p stewardv1.Provenance) string {
	return strings.ToLower(strings.TrimPrefix(p.String(), "PROVENANCE_"))
}

func contextFacts(t *stewardv1.Task, d *stewardv1.Decision) []any {
	out := []any{}
	for _, id := range d.ContextIds {
		for _, c := range t.ContextItems {
			if c.ContextId != id {
				continue
			}
			out = append(out, map[string]any{
				"context_id":  validUTF8(c.ContextId),
				"source":      validUTF8(c.Source),
				"owner_ref":   validUTF8(c.OwnerRef),
				"sensitivity": c.Sensitivity.String(),
				"egress":      stringList(c.Egress),
			})
		}
	}
	return out
}

// flagFacts are the kinds of d's flags, as "context_expired" or
// "context_egress", one per flag.
func flagFacts(flags []*stewardv1.DecisionFlag) []any {
	out := []any{}
	for _, f := range flags {
		out = append(out, strings.ToLower(strings.TrimPrefix(f.Kind.String(), "DECISION_FLAG_KIND_")))
	}
	return out
}

// holdContext denies a model call (docs/models.md) that would send
// context it may not: each item its params cite (params.context_ids) must
// be in the task's ledger, fresh now, and allowed to go to the model's
// provider. Whatever policy said, the call is denied before anything is
// sent; each reason names the item. Judged again on revalidation, so an
// item that expired while the call waited is caught too.
func holdContext(s *stewardv1.PolicySnapshot, t *stewardv1.Task, tool *stewardv1.ToolContract, request []byte, now time.Time) {
	m := tool.GetModel()
	if m == nil {
		return
	}
	var req struct {
		Params struct {
			ContextIDs []string `json:"context_ids"`
		} `json:"params"`
	}
	_ = json.Unmarshal(request, &req) // a request that does not parse cites nothing; the adapter refuses it
	var reasons []string
	for _, id := range req.Params.ContextIDs {
		item := task.FindContext(t, id)
		switch {
		case item == nil:
			reasons = append(reasons, fmt.Sprintf("context item %q is not in the task's ledger: attach it first (AttachContext)", id))
		case task.Expired(item, now):
			reasons = append(reasons, fmt.Sprintf("context item %q expired at %s: it is not sent to a model", id, item.ExpiresAt.AsTime().UTC().Format(time.RFC3339)))
		case !task.MaySendTo(item, m.Provider):
			reasons = append(reasons, fmt.Sprintf("context item %q may not be sent to %s (its egress: %v)", id, m.Provider, item.Egress))
		}
	}
	if len(reasons) == 0 {
		return
	}
	s.Decision = stewardv1.PolicyDecision_POLICY_DECISION_DENY
	s.Reasons = reasons
	s.RequiredApproverRoles, s.RequiredApprovals = nil, 0
}
