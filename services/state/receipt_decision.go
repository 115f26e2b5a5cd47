package state

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// receiptDecisions puts t's decision trail on r: the decisions in order,
// the context they cite, and every change of model or version from one
// decision to the next.
func receiptDecisions(r *stewardv1.Receipt, t *stewardv1.Task) {
	for _, d := range t.Decisions {
		r.Decisions = append(r.Decisions, proto.CloneOf(d))
	}
	for _, c := range t.ContextItems {
		r.ContextItems = append(r.ContextItems, proto.CloneOf(c))
	}
	r.VersionChanges = versionChanges(t.Decisions)
}

// versioned are the fields of a decision whose change within a task is
// marked, in the order the receipt names them.
var versioned = []struct {
	field string
	of    func(*stewardv1.Decision) string
}{
	{"provider", func(d *stewardv1.Decision) string { return d.GetCall().GetProvider() }},
	{"model", func(d *stewardv1.Decision) string { return d.GetCall().GetModelId() }},
	{"prompt_template_id", func(d *stewardv1.Decision) string { return d.GetVersions().GetPromptTemplateId() }},
	{"prompt_version", func(d *stewardv1.Decision) string { return d.GetVersions().GetPromptVersion() }},
	{"code_version", func(d *stewardv1.Decision) string { return d.GetVersions().GetCodeVersion() }},
	{"policy_revision", func(d *stewardv1.Decision) string { return d.GetVersions().GetPolicyRevision() }},
}

// versionChanges compares each decision with the one before it. A field
// a decision leaves empty says nothing, and is not a change.
func versionChanges(ds []*stewardv1.Decision) []*stewardv1.VersionChange {
	var out []*stewardv1.VersionChange
	last := map[string]string{}
	for _, d := range ds {
		for _, v := range versioned {
			now := v.of(d)
			if now == "" {
				continue
			}
			if was, ok := last[v.field]; ok && was != now {
				out = append(out, &stewardv1.VersionChange{DecisionId: d.DecisionId, Field: v.field, From: was, To: now})
			}
			last[v.field] = now
		}
	}
	return out
}

// decisionsMarkdown renders the decision trail.
func decisionsMarkdown(w md, r *stewardv1.Receipt) {
	w.section("Decisions")
	if len(r.Decisions) == 0 {
		w.line("No model decision was recorded.")
		return
	}
	w.line("Reported: the agent said so. Observed: Steward made the call itself.")
	w.line("")
	var calls, versions [][]string
	for _, d := range r.Decisions {
		c, v := d.GetCall(), d.GetVersions()
		id := code(d.DecisionId, true)
		calls = append(calls, []string{id, code(c.GetProvider()+"/"+c.GetModelId(), true) + " (" + provenanceWord(c.GetProvenance()) + ")",
			orDash(code(c.GetCallId(), true)), fmt.Sprintf("%d in, %d out", c.GetTokensIn(), c.GetTokensOut()), strconv.FormatInt(c.GetCostMicros(), 10),
			orDash(latency(c)), confidenceWord(d), ledTo(d), orDash(code(strings.Join(d.ContextIds, ", "), true)), flagWords(d)})
		if v == nil {
			versions = append(versions, []string{id, "—", "—", "—", "—", "—", "not recorded"})
			continue
		}
		versions = append(versions, []string{id, orDash(code(joinSet("@", v.PromptTemplateId, v.PromptVersion), true)),
			orDash(code(v.PromptDigest, true)), orDash(code(toolSchemas(v.ToolSchemas), true)), orDash(code(v.PolicyRevision, true)),
			orDash(code(v.CodeVersion, true)), provenanceWord(v.Provenance)})
	}
	w.table("Decision | Model | Call | Tokens | Cost (micros) | Latency | Confidence | Led to | Context | Flags", calls)
	w.line("")
	w.table("Decision | Prompt | Prompt digest | Tools offered | Policy | Code | Versions", versions)
	if len(r.VersionChanges) > 0 {
		w.line("")
	}
	for _, ch := range r.VersionChanges {
		w.line("- **Changed at %s:** %s %s → %s", code(ch.DecisionId, false), ch.Field, code(ch.From, false), code(ch.To, false))
	}
}

func latency(c *stewardv1.ModelCall) string {
	if c.GetLatency() == nil {
		return ""
	}
	return c.GetLatency().AsDuration().String()
}

// toolSchemas names the tools a model was offered, each at its version.
func toolSchemas(refs []*stewardv1.ToolSchemaRef) string {
	var parts []string
	for _, s := range refs {
		parts = append(parts, joinSet("@", s.Name, s.Version))
	}
	return strings.Join(parts, ", ")
}

func provenanceWord(p stewardv1.Provenance) string {
	if p == stewardv1.Provenance_PROVENANCE_OBSERVED {
		return "observed"
	}
	return "reported"
}

func confidenceWord(d *stewardv1.Decision) string {
	if d.Confidence == nil {
		return "—"
	}
	return strconv.FormatFloat(d.GetConfidence(), 'g', 3, 64)
}

func ledTo(d *stewardv1.Decision) string {
	switch l := d.LedTo.(type) {
	case *stewardv1.Decision_Proposals:
		return "proposals " + code(strings.Join(l.Proposals.GetProposalIds(), ", "), true)
	case *stewardv1.Decision_PlanVersion:
		return fmt.Sprintf("plan version %d", l.PlanVersion)
	case *stewardv1.Decision_Question:
		return "a question"
	case *stewardv1.Decision_NoAction:
		return "no action"
	}
	return "—" // an observed decision: its proposals name it
}

// flagWords names a decision's flags, in bold: a flag is a finding.
func flagWords(d *stewardv1.Decision) string {
	if len(d.Flags) == 0 {
		return "—"
	}
	var parts []string
	for _, f := range d.Flags {
		parts = append(parts, fmt.Sprintf("**%s** %s: %s", enumWords(f.Kind.String(), "DECISION_FLAG_KIND_"), code(f.ContextId, true), text(f.Detail)))
	}
	return strings.Join(parts, "; ")
}

// joinSet joins the parts that are set with sep.
func joinSet(sep string, parts ...string) string {
	var set []string
	for _, p := range parts {
		if p != "" {
			set = append(set, p)
		}
	}
	return strings.Join(set, sep)
}

// decisionSummary tells a decision or a context item on the timeline,
// without their content (a rationale, a URI): "" for other events.
func decisionSummary(who string, ev *stewardv1.Event) string {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_DecisionRecorded:
		d := p.DecisionRecorded.GetDecision()
		c := d.GetCall()
		s := fmt.Sprintf("%s recorded decision %s by %s/%s (%s), %d tokens, leading to %s",
			who, d.GetDecisionId(), c.GetProvider(), c.GetModelId(), provenanceWord(c.GetProvenance()), c.GetTokensIn()+c.GetTokensOut(), strings.ReplaceAll(ledTo(d), "`", ""))
		for _, f := range d.GetFlags() {
			s += fmt.Sprintf("; flagged %s: %s %s", enumWords(f.Kind.String(), "DECISION_FLAG_KIND_"), f.ContextId, f.Detail)
		}
		return s
	case *stewardv1.Event_ContextAttached:
		item := p.ContextAttached.GetItem()
		return fmt.Sprintf("%s attached context item %s from %s (%s)", who, item.GetContextId(), orNone(item.GetSource()),
			enumWords(item.GetSensitivity().String(), "DATA_SENSITIVITY_"))
	}
	return ""
}
