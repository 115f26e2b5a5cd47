package governance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance/policy"
)

// mapRoutePolicyInput is policyInput as it was before the per-action
// members were built as OPA's values: Go maps, converted by OPA
// (ast.InterfaceToValue, the Parts taken as they are), and their canonical
// form written from the maps. The reference the values route must match
// byte for byte (the canonical input, its hash) and value for value (what
// OPA sees).
func mapRoutePolicyInput(facts taskFacts, t *stewardv1.Task, tool toolFacts, a *stewardv1.Action, request []byte) (ast.Value, inputRecord, error) {
	params, err := requestParams(request)
	if err != nil {
		return nil, inputRecord{}, err
	}
	actionFacts := map[string]any{
		"action_id":    a.ActionId,
		"tool":         a.Tool,
		"tool_version": a.ToolVersion,
		"target":       a.Target,
		"params":       params,
		"effect_class": a.EffectClass.String(),
		"proposed_by":  a.ProposedBy,
		"edit_of":      a.EditOf,
		"amendment_of": a.AmendmentOf,
		"compensates":  a.Compensates,
	}
	r := a.Rationale
	if r == nil {
		r = &stewardv1.ActionRationale{}
	}
	rationale, err := protoFacts(r.ProtoReflect())
	if err != nil {
		return nil, inputRecord{}, err
	}
	actionFacts["rationale"] = rationale
	credential := mapRouteCredentialFacts(t)
	risk := map[string]any{"contract_risk_tier": t.Contract.GetRiskTier().String()}
	input := map[string]any{
		"task":       facts.value.Term().Value,
		"tool":       tool.value.Term().Value,
		"action":     actionFacts,
		"credential": credential,
		"risk":       risk,
	}
	members := []mapMember{
		{key: "action", value: hashedStrings(actionFacts)},
		{key: "credential", value: hashedStrings(credential)},
	}
	if d := task.FindDecision(t, a.DecisionId); a.DecisionId != "" && d != nil {
		decision := decisionFacts(t, d)
		input["decision"] = decision
		members = append(members, mapMember{key: "decision", value: decision})
	}
	rec, err := mapRouteCanonical(append(members,
		mapMember{key: "risk", value: risk},
		mapMember{key: "task", canonical: facts.canonical},
		mapMember{key: "tool", canonical: tool.canonical},
	))
	if err != nil {
		return nil, inputRecord{}, err
	}
	v, err := ast.InterfaceToValue(input)
	return v, rec, err
}

// mapRouteCredentialFacts is credentialFacts as it was, a map built
// field by field.
func mapRouteCredentialFacts(t *stewardv1.Task) map[string]any {
	c := t.Credential.GetCredential()
	facts := map[string]any{
		"credential_ref": c.GetCredentialId(),
		"principal":      c.GetPrincipal(),
		"allowed_tools":  stringList(c.GetAllowedTools()),
		"scopes":         stringList(c.GetScopes()),
		"delegated":      c.GetParentCredentialId() != "",
		"depth":          json.Number(strconv.Itoa(len(t.Credential.GetChain()))),
	}
	if c.GetCredentialId() == "" {
		facts["credential_ref"] = t.Contract.GetCredentialRef()
	}
	return facts
}

type mapMember struct {
	key       string
	value     any
	canonical []byte
}

func mapRouteCanonical(members []mapMember) (inputRecord, error) {
	var b bytes.Buffer
	for i, m := range members {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		b.WriteString(sep)
		b.Write(strconv.AppendQuote(b.AvailableBuffer(), m.key))
		b.WriteByte(':')
		if m.canonical != nil {
			b.Write(m.canonical)
		} else if err := action.WriteCanonicalJSON(&b, m.value); err != nil {
			return inputRecord{}, err
		}
	}
	b.WriteString("}")
	return inputRecord{canonical: b.Bytes(), hash: policystore.InputHash(b.Bytes())}, nil
}

// TestPolicyInputMatchesMapRoute: for every task, tool, action, decision
// and params of a table (tasks with and without a credential, invalid
// UTF-8 where a proto can hold it, rationales, decisions named and not),
// the input built as OPA's values is the one the map route built: the
// same canonical bytes and hash, the same value for OPA, and the same
// decision of the default bundle.
func TestPolicyInputMatchesMapRoute(t *testing.T) {
	engine, err := policy.Load(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	conf := 0.25
	decision := &stewardv1.Decision{
		DecisionId: "dec-1", Rationale: "because\xff", Confidence: &conf, ContextIds: []string{"ctx-1"},
		Call:     &stewardv1.ModelCall{Provider: "acme", ModelId: "m-1", Provenance: stewardv1.Provenance(1)},
		Versions: &stewardv1.VersionSnapshot{PromptTemplateId: "tpl", PromptVersion: "3", Provenance: stewardv1.Provenance(2)},
		Flags:    []*stewardv1.DecisionFlag{{Kind: stewardv1.DecisionFlagKind(1)}},
	}
	withDecision := func(tk *stewardv1.Task) *stewardv1.Task {
		tk = proto.CloneOf(tk)
		tk.Decisions = append(tk.Decisions, decision)
		tk.ContextItems = append(tk.ContextItems, &stewardv1.ContextItem{ContextId: "ctx-1", Source: "kb\xff", Egress: []string{"acme"}})
		return tk
	}
	bench, benchTool, benchAct, _ := benchAction(t)
	tasks := []*stewardv1.Task{
		{},
		bench,
		withDecision(bench),
		{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING, Contract: &stewardv1.TaskContract{TaskId: "t1", CredentialRef: "cred-0", RiskTier: stewardv1.RiskTier(9)}},
		{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING, Contract: fullContract(5), Credential: &stewardv1.CredentialState{
			Credential: &stewardv1.TaskCredential{CredentialId: "cred-2", Principal: "bob\xff", AllowedTools: []string{"mail", "bad\xfe\xff"}, Scopes: []string{}, ParentCredentialId: "cred-1"},
			Chain:      []*stewardv1.SignedCredential{{}, {}},
		}},
		withDecision(&stewardv1.Task{Contract: fullContract(2)}),
	}
	tools := []*stewardv1.ToolContract{{}, benchTool, fullTool(0), fullTool(3)}
	actions := []*stewardv1.Action{
		{},
		benchAct,
		{ActionId: "act-2", Tool: "mail\xff", Target: "日本\u2028", EffectClass: stewardv1.EffectClass(42), DecisionId: "dec-1"},
		{ActionId: "act-3", Tool: "mail", ToolVersion: "1", Compensates: "act-1", EditOf: "act-0", AmendmentOf: "am\"1", ProposedBy: "<&>", DecisionId: "dec-missing",
			Rationale: &stewardv1.ActionRationale{ExpectedImpact: "é ü 日本 🙂 <&>\u2028", RollbackPlan: "undo\n", Evidence: []string{"ticket:7", "kv://x"}, Alternatives: []string{"wait"}}},
		{ActionId: "act-4", Tool: "search", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DecisionId: "dec-1", Rationale: &stewardv1.ActionRationale{}},
	}
	params := []string{
		``,
		`{}`,
		`{"to":["a@b.c","é 🙂"],"n":3,"x":2.5,"tiny":1e-7,"big":1e21,"neg":-0.000001,"nested":{"a":[1,{"b":null}],"t":true,"s":"<&>\u2028\ufffd"}}`,
		`{"deep":{"a":{"b":{"c":[[],{}]}}},"max":9007199254740993,"e":-1.5e300}`,
	}
	n := 0
	for ti, tk := range tasks {
		facts, err := newTaskFacts(tk)
		if err != nil {
			t.Fatalf("task %d: %v", ti, err)
		}
		for ui, tc := range tools {
			tool, err := newToolFacts([]string{"", "acme"}[ui%2], tc)
			if err != nil {
				t.Fatalf("tool %d: %v", ui, err)
			}
			for ai, a := range actions {
				for pi, p := range params {
					request, err := action.Canonical(action.Request{TaskID: "t", Tool: a.Tool, Target: a.Target, Params: []byte(p)})
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("task%d/tool%d/action%d/params%d", ti, ui, ai, pi)
					compareWithMapRoute(t, engine, name, facts, tk, tool, a, request)
					n++
				}
			}
		}
	}
	if n < 384 {
		t.Fatalf("%d inputs compared, want at least 384", n)
	}
}

func compareWithMapRoute(t *testing.T, engine *policy.Engine, name string, facts taskFacts, tk *stewardv1.Task, tool toolFacts, a *stewardv1.Action, request []byte) {
	t.Helper()
	want, wantRec, wantErr := mapRoutePolicyInput(facts, tk, tool, a, request)
	var inputs actionInputs
	got, gotRec, err := inputs.policyInput(facts, tk, tool, a, request, new(bytes.Buffer))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: err = %v, the map route's = %v", name, err, wantErr)
	}
	if err != nil {
		return
	}
	if !bytes.Equal(gotRec.canonical, wantRec.canonical) || gotRec.hash != wantRec.hash {
		t.Fatalf("%s: canonical input %s\n%s\nthe map route's %s\n%s", name, gotRec.hash, gotRec.canonical, wantRec.hash, wantRec.canonical)
	}
	if got.Compare(want) != 0 || got.String() != want.String() {
		t.Fatalf("%s: OPA sees\n %s\nthe map route gave it\n %s", name, got, want)
	}
	ctx := context.Background()
	gotRes, err := engine.EvaluateValue(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	wantRes, err := engine.EvaluateValue(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gotRes.Decision, gotRes.RiskTier, gotRes.Reasons, gotRes.RequiredApproverRoles, gotRes.RequiredApprovals) !=
		fmt.Sprint(wantRes.Decision, wantRes.RiskTier, wantRes.Reasons, wantRes.RequiredApproverRoles, wantRes.RequiredApprovals) {
		t.Fatalf("%s: decided %+v, the map route %+v", name, gotRes, wantRes)
	}
}
