package canary

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

func (s *Sample) validate(path string, budgetCap BudgetCap, tools map[string]bool) error {
	if !nameRE.MatchString(s.Name) {
		return fieldf(path+".name", "%q is not a name (lowercase letters, digits, . _ -; at most 63)", s.Name)
	}
	switch s.Kind {
	case KindNormal, KindEdge, KindExpectedFailure:
	default:
		return fieldf(path+".kind", "%q is not normal, edge or expected_failure", s.Kind)
	}
	if err := s.parseContract(path, budgetCap); err != nil {
		return err
	}
	if len(s.Input) > 0 {
		if err := json.Unmarshal(s.Input, &s.input); err != nil || s.input == nil {
			return fieldf(path+".input", "is not a JSON object")
		}
	}
	if err := checkApprover(path+".approve_as", s.ApproveAs); err != nil {
		return err
	}
	if (len(s.Plan) > 0) == (len(s.Steps) > 0) {
		return fieldf(path, "give exactly one of plan and steps")
	}
	if len(s.Plan) > 0 {
		s.plan = &stewardv1.Plan{}
		if err := protojson.Unmarshal(s.Plan, s.plan); err != nil {
			return fieldf(path+".plan", "%v", err)
		}
		if s.plan.Ending != stewardv1.PlanEnding_PLAN_ENDING_PRODUCE {
			return fieldf(path+".plan.ending", "a sample's plan ends PLAN_ENDING_PRODUCE: the canary judges the produced result")
		}
	}
	if len(s.Steps) > MaxSteps {
		return fieldf(path+".steps", "%d steps: at most %d", len(s.Steps), MaxSteps)
	}
	for i, st := range s.Steps {
		if err := st.validate(fmt.Sprintf("%s.steps[%d]", path, i), tools); err != nil {
			return err
		}
	}
	switch {
	case s.Kind == KindExpectedFailure && s.Expect.Accepted:
		return fieldf(path+".expect.accepted", "an expected_failure sample is expected not accepted")
	case !s.Expect.Accepted && s.Expect.Reason == "":
		return fieldf(path+".expect.reason", "a sample expected not accepted names the reason it fails with (any failure would pass otherwise)")
	case s.Expect.Accepted && s.Expect.Reason != "":
		return fieldf(path+".expect.reason", "an accepted sample has no failure reason")
	}
	return nil
}

// parseContract reads the sample's task contract and bounds its budget by
// the cap: a contract without one gets the cap.
func (s *Sample) parseContract(path string, budgetCap BudgetCap) error {
	s.contract = &stewardv1.TaskContract{}
	if len(s.Contract) == 0 {
		return fieldf(path+".contract", "is required: the task contract (intent, owners, acceptance criteria, budget)")
	}
	if err := protojson.Unmarshal(s.Contract, s.contract); err != nil {
		return fieldf(path+".contract", "%v", err)
	}
	b := s.contract.Budget
	if b == nil {
		s.contract.Budget = &stewardv1.Budget{MaxTokens: budgetCap.MaxTokens, MaxCostMicros: budgetCap.MaxCostMicros, Currency: cmp.Or(budgetCap.Currency, "USD")}
		return nil
	}
	if b.MaxCostMicros == 0 || b.MaxCostMicros > budgetCap.MaxCostMicros {
		return fieldf(path+".contract.budget.max_cost_micros", "%d is past the budget cap of %d", b.MaxCostMicros, budgetCap.MaxCostMicros)
	}
	if b.MaxTokens == 0 || b.MaxTokens > budgetCap.MaxTokens {
		return fieldf(path+".contract.budget.max_tokens", "%d is past the budget cap of %d", b.MaxTokens, budgetCap.MaxTokens)
	}
	return nil
}

func (st Step) validate(path string, tools map[string]bool) error {
	n := 0
	for _, set := range []bool{st.Propose != nil, st.Decide != nil, st.Produce != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fieldf(path, "a step is exactly one of propose, decide and produce")
	}
	switch {
	case st.Propose != nil && !tools[st.Propose.Tool]:
		return fieldf(path+".propose.tool", "%q is not one of the definition's tools", st.Propose.Tool)
	case st.Propose != nil:
		return checkApprover(path+".propose.approve_as", st.Propose.ApproveAs)
	case st.Decide != nil && st.Decide.Model == "":
		return fieldf(path+".decide.model", "is required: the model id the decision records")
	case st.Decide != nil && (st.Decide.TokensIn < 0 || st.Decide.TokensOut < 0 || st.Decide.CostMicros < 0):
		return fieldf(path+".decide", "tokens and cost are not negative")
	case st.Produce != nil:
		for i, a := range st.Produce.Artifacts {
			p := fmt.Sprintf("%s.produce.artifacts[%d]", path, i)
			if a.Name == "" {
				return fieldf(p+".name", "is required")
			}
			if len(a.Content) == 0 {
				return fieldf(p+".content", "is required")
			}
		}
	}
	return nil
}

// Agent is the principal the samples' agent acts as in the canary's
// Steward.
const Agent = "agent:canary"

// checkApprover refuses a principal Steward would not accept, and the
// agent itself: it approves nothing of its own.
func checkApprover(path, p string) error {
	if p == "" {
		return nil
	}
	if rpc.CheckPrincipal(path, p) != nil {
		return fieldf(path, "%q is not a principal Steward accepts", p)
	}
	if p == Agent {
		return fieldf(path, "%s is the samples' agent, which approves nothing of its own", Agent)
	}
	return nil
}

var definitionType = reflect.TypeFor[Definition]()

// unknownFields refuses a key of an object that its Go type does not
// name, by its path; raw JSON (a contract, a plan, a stub's body) is
// checked by its own decoder, or not at all.
func unknownFields(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return nil
	}
	// A wrong type is named here, by the whole path: the typed decode's
	// error drops the indexes of the lists it is in.
	if want := wrongType(v, t); want != "" {
		return fieldf(cmp.Or(path, "(the definition)"), "is %s, want %s", jsonKind(v), want)
	}
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if err := unknownFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return nil // a map: any keys
		}
		fields := jsonFields(t)
		// In order: of two unknown fields, the same one is named each time.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e := x[k]
			ft, ok := fields[k]
			p := strings.TrimPrefix(path+"."+k, ".")
			if !ok {
				return fieldf(p, "is not a field of a canary definition here")
			}
			if err := unknownFields(e, ft, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields are the exported fields of struct t by their JSON names.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "" && name != "-" {
			out[name] = f.Type
		}
	}
	return out
}
