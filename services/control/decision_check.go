package control

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Limits on what a decision and a context item carry: a decision is a
// record of why, not the prompt or the answer, which stay where they are
// and are named by digest.
const (
	MaxDecisionRefs = 64   // context_ids, proposal_ids, tool_schemas
	MaxEvidence     = 16   // evidence references
	MaxEgress       = 32   // providers a context item may go to
	MaxURILen       = 2048 // a context item's uri, an evidence reference
	// MaxDecisionBytes bounds a decision as a whole: every task's view
	// holds its decisions, up to its loop cap of them, so each field's
	// bound alone would allow a hundred times more.
	MaxDecisionBytes = 16 << 10
	// decidedAtSkew is how far in the future a decision's time may be:
	// clocks differ, a decision from the future does not.
	decidedAtSkew = time.Minute
)

// checkDecision checks a decision as the agent sends it, naming the first
// field that is wrong.
func checkDecision(d *stewardv1.Decision, now time.Time) error {
	if d == nil {
		return errs.Field("decision", "is required")
	}
	for _, c := range []error{
		checkText("decision.decision_id", d.DecisionId, MaxRefLen, true),
		checkModelCall(d.Call),
		checkVersions(d.Versions),
		checkRefs("decision.context_ids", d.ContextIds, MaxRefLen, MaxDecisionRefs),
		checkConfidence(d.Confidence),
		checkText("decision.rationale", d.Rationale, MaxTextLen, false),
		checkRefs("decision.evidence", d.Evidence, MaxURILen, MaxEvidence),
		checkPast("decision.decided_at", d.DecidedAt, now),
		checkText("decision.milestone_id", d.MilestoneId, MaxRefLen, false),
		checkLedTo(d),
	} {
		if c != nil {
			return c
		}
	}
	// Sized on a copy: Size caches sizes in the message it measures, which
	// is changed after (reported), and a stale cache breaks its marshaling.
	if n := proto.Size(proto.CloneOf(d)); n > MaxDecisionBytes {
		return &errs.Error{Code: errs.TooLarge, Field: "decision", Message: fmt.Sprintf("is %d bytes encoded; the limit is %d: keep the record short, and evidence by reference", n, MaxDecisionBytes)}
	}
	switch {
	case len(d.Flags) > 0:
		return errs.Field("decision.flags", "are Steward's to find; leave them unset")
	case d.RecordedBy != "":
		return errs.Field("decision.recorded_by", "is Steward's; leave it unset")
	case d.RecordedAt != nil:
		return errs.Field("decision.recorded_at", "is Steward's; leave it unset")
	case d.Carried:
		return errs.Field("decision.carried", "is Steward's, set on what a fork carries from its parent; leave it unset")
	}
	return nil
}

func checkModelCall(c *stewardv1.ModelCall) error {
	if c == nil {
		return errs.Field("decision.call", "is required: which model made the decision")
	}
	for _, err := range []error{
		checkText("decision.call.provider", c.Provider, MaxRefLen, true),
		checkText("decision.call.model_id", c.ModelId, MaxRefLen, true),
		checkText("decision.call.prompt_digest", c.PromptDigest, MaxRefLen, false),
		checkText("decision.call.call_id", c.CallId, MaxRefLen, false),
		checkReported("decision.call.provenance", c.Provenance),
	} {
		if err != nil {
			return err
		}
	}
	switch {
	case c.TokensIn < 0:
		return errs.Field("decision.call.tokens_in", "must not be negative")
	case c.TokensOut < 0:
		return errs.Field("decision.call.tokens_out", "must not be negative")
	case c.CostMicros < 0:
		return errs.Field("decision.call.cost_micros", "must not be negative")
	case c.Latency != nil && (c.Latency.CheckValid() != nil || c.Latency.AsDuration() < 0):
		return errs.Field("decision.call.latency", "is not a valid, non-negative duration")
	}
	return nil
}

func checkVersions(v *stewardv1.VersionSnapshot) error {
	if v == nil {
		return nil
	}
	for _, err := range []error{
		checkText("decision.versions.prompt_template_id", v.PromptTemplateId, MaxRefLen, false),
		checkText("decision.versions.prompt_version", v.PromptVersion, MaxRefLen, false),
		checkText("decision.versions.prompt_digest", v.PromptDigest, MaxRefLen, false),
		checkText("decision.versions.policy_revision", v.PolicyRevision, MaxRefLen, false),
		checkText("decision.versions.code_version", v.CodeVersion, MaxRefLen, false),
		checkReported("decision.versions.provenance", v.Provenance),
	} {
		if err != nil {
			return err
		}
	}
	if len(v.ToolSchemas) > MaxDecisionRefs {
		return tooMany("decision.versions.tool_schemas", len(v.ToolSchemas), MaxDecisionRefs)
	}
	for i, s := range v.ToolSchemas {
		f := fmt.Sprintf("decision.versions.tool_schemas[%d]", i)
		for _, err := range []error{
			checkText(f+".name", s.Name, MaxRefLen, true),
			checkText(f+".version", s.Version, MaxRefLen, false),
			checkText(f+".digest", s.Digest, MaxRefLen, false),
		} {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// checkReported refuses an agent's claim that Steward observed something.
func checkReported(field string, p stewardv1.Provenance) error {
	if p != stewardv1.Provenance_PROVENANCE_UNSPECIFIED && p != stewardv1.Provenance_PROVENANCE_REPORTED {
		return errs.Field(field, "is %v: what an agent records is reported; only Steward's own calls are observed", p)
	}
	return nil
}

func checkConfidence(c *float64) error {
	if c != nil && (math.IsNaN(*c) || *c < 0 || *c > 1) {
		return errs.Field("decision.confidence", "is %v; a confidence is from 0 to 1", *c)
	}
	return nil
}

func checkLedTo(d *stewardv1.Decision) error {
	switch l := d.LedTo.(type) {
	case nil:
		return errs.Field("decision.led_to", "is required: proposals, a plan_version, a question or no_action")
	case *stewardv1.Decision_Proposals:
		ids := l.Proposals.GetProposalIds()
		if len(ids) == 0 {
			return errs.Field("decision.proposals.proposal_ids", "is empty: name the proposals, or say no_action")
		}
		return checkRefs("decision.proposals.proposal_ids", ids, MaxRequestID, MaxDecisionRefs)
	case *stewardv1.Decision_PlanVersion:
		if l.PlanVersion == 0 {
			return errs.Field("decision.plan_version", "must be 1 or more")
		}
	case *stewardv1.Decision_Question:
		if strings.TrimSpace(l.Question) == "" {
			return errs.Field("decision.question", "is blank")
		}
		return checkText("decision.question", l.Question, MaxTextLen, true)
	}
	return nil
}

// checkContextItem checks a context item as the agent sends it.
func checkContextItem(c *stewardv1.ContextItem) error {
	if c == nil {
		return errs.Field("item", "is required")
	}
	for _, err := range []error{
		checkText("item.context_id", c.ContextId, MaxRefLen, true),
		checkURI("item.uri", c.Uri),
		checkText("item.digest", c.Digest, MaxRefLen, true),
		checkText("item.source", c.Source, MaxRefLen, false),
		checkText("item.owner_ref", c.OwnerRef, MaxRefLen, false),
		checkRefs("item.egress", c.Egress, MaxRefLen, MaxEgress),
		checkTime("item.fetched_at", c.FetchedAt),
		checkTime("item.expires_at", c.ExpiresAt),
	} {
		if err != nil {
			return err
		}
	}
	if _, ok := stewardv1.DataSensitivity_name[int32(c.Sensitivity)]; !ok {
		return errs.Field("item.sensitivity", "%d is not a known sensitivity", c.Sensitivity)
	}
	switch {
	case c.FetchedAt != nil && c.ExpiresAt != nil && c.ExpiresAt.AsTime().Before(c.FetchedAt.AsTime()):
		return errs.Field("item.expires_at", "is before fetched_at")
	case c.AttachedBy != "":
		return errs.Field("item.attached_by", "is Steward's; leave it unset")
	case c.AttachedAt != nil:
		return errs.Field("item.attached_at", "is Steward's; leave it unset")
	case len(c.CitedBy) > 0:
		return errs.Field("item.cited_by", "is Steward's; leave it unset")
	}
	return nil
}

func checkURI(field, s string) error {
	if err := checkText(field, s, MaxURILen, true); err != nil {
		return err
	}
	if u, err := url.Parse(s); err != nil || u.Scheme == "" {
		return errs.Field(field, "%s is not an absolute URI", errs.Quote(s))
	}
	return nil
}

// checkRefs checks a list of short, non-blank references.
func checkRefs(field string, refs []string, maxLen, maxN int) error {
	if len(refs) > maxN {
		return tooMany(field, len(refs), maxN)
	}
	for i, r := range refs {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := checkText(f, r, maxLen, true); err != nil {
			return err
		}
		if strings.TrimSpace(r) == "" {
			return errs.Field(f, "is blank")
		}
	}
	return nil
}

func checkPast(field string, ts *timestamppb.Timestamp, now time.Time) error {
	if err := checkTime(field, ts); err != nil {
		return err
	}
	if ts != nil && ts.AsTime().After(now.Add(decidedAtSkew)) {
		return errs.Field(field, "is in the future")
	}
	return nil
}

func tooMany(field string, n, limit int) error {
	return &errs.Error{Code: errs.TooLarge, Field: field, Message: fmt.Sprintf("has %d entries; the limit is %d", n, limit)}
}
