package control

import (
	"errors"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestModelParamsNameTheBadField: a model call's params are checked as it
// is proposed, each refusal naming its field — a max_tokens given as a
// string of digits included, which the model's provider would refuse only
// after the call had been judged, and perhaps approved.
func TestModelParamsNameTheBadField(t *testing.T) {
	tool := &stewardv1.ToolContract{Name: "llm", Endpoint: &stewardv1.ToolContract_Model{Model: &stewardv1.ModelEndpoint{MaxTokens: 100}}}
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct{ params, field string }{
		{`{` + msgs + `}`, ""},
		{`{` + msgs + `,"max_tokens":100}`, ""},
		{`{` + msgs + `,"max_tokens":null}`, ""}, // absent: the tool's cap
		{`{"messages":[]}`, "params.messages"},
		{`{"messages":[{"role":"king","content":"hi"}]}`, "params.messages[0].role"},
		{`{` + msgs + `,"max_tokens":"50"}`, "params.max_tokens"},
		{`{` + msgs + `,"max_tokens":1.5}`, "params.max_tokens"},
		{`{` + msgs + `,"max_tokens":101}`, "params.max_tokens"},
		{`{` + msgs + `,"max_tokens":0}`, "params.max_tokens"},
		{`{` + msgs + `,"decision_id":7}`, "params.decision_id"},
		{`{` + msgs + `,"context_ids":[""]}`, "params.context_ids[0]"},
	} {
		err := checkModelParams(tool, []byte(tt.params))
		var e *errs.Error
		field := ""
		if errors.As(err, &e) {
			field = e.Field
		}
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: %v, want it taken", tt.params, err)
		case tt.field != "" && (errs.CodeOf(err) != errs.Invalid || field != tt.field):
			t.Errorf("%s: %v, want a refusal naming %s", tt.params, err, tt.field)
		}
	}
}
