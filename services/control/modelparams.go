package control

import (
	"encoding/json"
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// checkModelParams checks the params of a call of a model tool (an
// llm.chat, docs/models.md) as the proposal is made, naming the field: a
// call refused at its dispatch would have been judged, and maybe
// approved, for nothing.
func checkModelParams(tool *stewardv1.ToolContract, params []byte) error {
	m := tool.GetModel()
	if m == nil {
		return nil
	}
	var p struct {
		Messages []struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
		MaxTokens        json.RawMessage `json:"max_tokens"`
		DecisionID       any             `json:"decision_id"`
		ContextIDs       []any           `json:"context_ids"`
		PromptTemplateID any             `json:"prompt_template_id"`
		PromptVersion    any             `json:"prompt_version"`
		CodeVersion      any             `json:"code_version"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return errs.Field("params", "are not what a model call takes (messages, max_tokens, decision_id, context_ids, prompt_template_id, prompt_version, code_version): %v", err)
	}
	if len(p.Messages) == 0 {
		return errs.Field("params.messages", "is required: at least one message")
	}
	for i, msg := range p.Messages {
		f := fmt.Sprintf("params.messages[%d]", i)
		switch {
		case msg.Role == nil || !chatRoles[*msg.Role]:
			return errs.Field(f+".role", "must be system, user, assistant or tool")
		case msg.Content == nil:
			return errs.Field(f+".content", "is required")
		}
	}
	if len(p.MaxTokens) > 0 && string(p.MaxTokens) != "null" { // null: absent, the tool's cap
		var n int64 // a JSON integer: a string of digits is not one
		if err := json.Unmarshal(p.MaxTokens, &n); err != nil || n < 1 || n > m.MaxTokens {
			return errs.Field("params.max_tokens", "is %s; tool %s allows 1 to %d tokens a call", p.MaxTokens, tool.Name, m.MaxTokens)
		}
	}
	for name, v := range map[string]any{"decision_id": p.DecisionID, "prompt_template_id": p.PromptTemplateID, "prompt_version": p.PromptVersion, "code_version": p.CodeVersion} {
		if s, ok := v.(string); v != nil && (!ok || len(s) > MaxRefLen) {
			return errs.Field("params."+name, "must be a string of at most %d bytes", MaxRefLen)
		}
	}
	for i, v := range p.ContextIDs {
		if s, ok := v.(string); !ok || s == "" || len(s) > MaxRefLen {
			return errs.Field(fmt.Sprintf("params.context_ids[%d]", i), "must be a context item's id")
		}
	}
	return nil
}

// chatRoles are the roles a chat message may have.
var chatRoles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}
