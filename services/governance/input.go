package governance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// facts renders protos the way policies read them: field names as in the
// .proto files, enums by name, every field present.
var facts = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

// policyInput builds the input document for one evaluation, and the hash
// of its canonical form that the snapshot records.
func policyInput(t *stewardv1.Task, tool *stewardv1.ToolContract, a *stewardv1.Action, request []byte) (map[string]any, string, error) {
	taskFacts, err := asMap(t.Contract)
	if err != nil {
		return nil, "", err
	}
	taskFacts["status"] = t.Status.String()
	toolFacts, err := asMap(tool)
	if err != nil {
		return nil, "", err
	}
	var req struct {
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, "", fmt.Errorf("canonical request: %w", err)
	}
	input := map[string]any{
		"task": taskFacts,
		"tool": toolFacts,
		"action": map[string]any{
			"action_id":    a.ActionId,
			"tool":         a.Tool,
			"tool_version": a.ToolVersion,
			"target":       a.Target,
			"params":       req.Params,
			"effect_class": a.EffectClass.String(),
			"proposed_by":  a.ProposedBy,
			"edit_of":      a.EditOf,
		},
		"credential": credentialFacts(t),
		"risk":       map[string]any{"contract_risk_tier": t.Contract.GetRiskTier().String()},
	}
	canonical, err := action.CanonicalJSON(roundTrip(input))
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(canonical)
	return input, hex.EncodeToString(sum[:]), nil
}

// credentialFacts is what policy sees of the task's credential: its bounds,
// and whether it was delegated. Governance has checked it before policy
// runs (credentialRefusal); policy may ask for more, such as an approval
// for any delegated task.
func credentialFacts(t *stewardv1.Task) map[string]any {
	c := t.Credential.GetCredential()
	facts := map[string]any{
		"credential_ref": c.GetCredentialId(),
		"principal":      c.GetPrincipal(),
		"allowed_tools":  append([]string{}, c.GetAllowedTools()...),
		"scopes":         append([]string{}, c.GetScopes()...),
		"delegated":      c.GetParentCredentialId() != "",
		"depth":          len(t.Credential.GetChain()),
	}
	if c.GetCredentialId() == "" {
		facts["credential_ref"] = t.Contract.GetCredentialRef()
	}
	return facts
}

func asMap(m proto.Message) (map[string]any, error) {
	data, err := facts.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(data, &out)
}

// roundTrip normalises Go values (typed slices) to what encoding/json
// decodes, which is what CanonicalJSON takes.
func roundTrip(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}
