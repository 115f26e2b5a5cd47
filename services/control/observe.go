package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/toolreg"
)

// observer records the decision behind each model call Steward made itself
// (an llm.chat action, docs/models.md) once it succeeded: the model as
// the provider answered, the tokens, latency, cost and call id as seen —
// observed — and what the agent said of its prompt and code, and the
// context it cited, in the action's params — reported. The decision's id
// is params.decision_id, else the action's; a decision already recorded
// under it is left as it is.
type observer struct {
	commands
	log      *eventlog.Log
	tasks    *taskstore.Store
	tools    *toolreg.Registry
	requests *action.Store
	results  *action.Store
}

// modelParams are what the agent says in an llm.chat action's params
// besides the conversation.
type modelParams struct {
	Messages         json.RawMessage `json:"messages"`
	DecisionID       string          `json:"decision_id"`
	ContextIDs       []string        `json:"context_ids"`
	PromptTemplateID string          `json:"prompt_template_id"`
	PromptVersion    string          `json:"prompt_version"`
	CodeVersion      string          `json:"code_version"`
}

// modelAnswer is the part of a model call's stored result observe reads
// (adapter.ModelResult).
type modelAnswer struct {
	Model  string `json:"model"`
	CallID string `json:"call_id"`
	Usage  struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
	LatencyMS int64 `json:"latency_ms"`
}

// observe is the reaction to an action's outcome.
func (o *observer) observe(ctx context.Context, rec *stewardv1.EventRecord) error {
	out := rec.Event.GetActionOutcomeRecorded()
	if out.GetOutcome().GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		return nil
	}
	taskID := rec.Event.TaskId
	// As of the outcome: what it decides is decided again on the task as
	// the log has it (apply).
	t, _, err := o.tasks.LoadSince(ctx, taskID, rec.Sequence)
	if err != nil {
		return err
	}
	a := task.FindAction(t, out.ActionId)
	if a == nil || task.Terminal(t.Status) {
		return nil
	}
	entry, err := o.tools.Lookup(ctx, o.log, t.Tenant, a.Tool, a.ToolVersion)
	if errs.Is(err, errs.NotFound) || err == nil && entry.Tool.Contract.GetModel() == nil {
		return nil
	} else if err != nil {
		return err
	}
	d, err := o.observed(ctx, entry.Tool.Contract.GetModel(), a)
	if err != nil || task.FindDecision(t, d.DecisionId) != nil {
		return err
	}
	_, err = o.apply(ctx, taskID, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		if task.FindDecision(cur, d.DecisionId) != nil || task.Terminal(cur.Status) {
			return nil, nil
		}
		d.Flags = task.DecisionFlags(cur, d, d.DecidedAt)
		return o.event(event.Meta{ID: event.ID(taskID, event.TypeDecisionRecorded, d.DecisionId), TaskID: taskID,
			Actor: o.actor(stewardPrincipal), CausationID: rec.Event.EventId, CorrelationID: a.ProposalId}, &stewardv1.DecisionRecorded{Decision: d})
	})
	return err
}

// observed is the decision behind a, a succeeded call of model m.
func (o *observer) observed(ctx context.Context, m *stewardv1.ModelEndpoint, a *stewardv1.Action) (*stewardv1.Decision, error) {
	request, err := o.requests.Request(ctx, a.Request, a.RequestRef, a.RequestHash)
	if err != nil {
		return nil, err
	}
	var req struct {
		Params modelParams `json:"params"`
	}
	_ = json.Unmarshal(request, &req) // the adapter read it to make the call
	p := req.Params
	result, err := o.results.Result(ctx, a.Outcome.Result, a.Outcome.ResultRef, a.Outcome.ResultHash)
	if err != nil {
		return nil, err
	}
	var ans modelAnswer
	_ = json.Unmarshal(result, &ans)
	digest := sha256.Sum256(p.Messages)
	d := &stewardv1.Decision{
		DecisionId: p.DecisionID,
		Call: &stewardv1.ModelCall{Provider: m.Provider, ModelId: ans.Model, PromptDigest: "sha256:" + hex.EncodeToString(digest[:]),
			TokensIn: ans.Usage.PromptTokens, TokensOut: ans.Usage.CompletionTokens, Latency: durationpb.New(time.Duration(ans.LatencyMS) * time.Millisecond),
			CostMicros: a.Outcome.CostMicros, CallId: ans.CallID, Provenance: stewardv1.Provenance_PROVENANCE_OBSERVED},
		ContextIds: knownContext(p.ContextIDs),
		DecidedAt:  a.Outcome.FinishedAt,
	}
	if d.DecisionId == "" {
		d.DecisionId = a.ActionId
	}
	if d.Call.ModelId == "" {
		d.Call.ModelId = m.Model // the provider did not say: the one asked
	}
	if p.PromptTemplateID != "" || p.PromptVersion != "" || p.CodeVersion != "" {
		d.Versions = &stewardv1.VersionSnapshot{PromptTemplateId: p.PromptTemplateID, PromptVersion: p.PromptVersion,
			CodeVersion: p.CodeVersion, Provenance: stewardv1.Provenance_PROVENANCE_REPORTED}
	}
	return d, nil
}

// knownContext is ids without repeats: the fold refuses a decision citing
// one twice, and governance denied a call citing one not in the ledger.
func knownContext(ids []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
