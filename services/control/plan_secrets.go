package control

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/services/control/plandriver"
)

// A plan's literal params go where a proposal's go: GetTask, ListTasks,
// WatchTask, exports and the stream files all show the plan, so a value
// its tool marks secret is concealed there as in a proposal's canonical
// request (docs/secrets.md, "Plans"). concealPlan commits and seals it on
// submission; the driver opens it again into the action it proposes
// (openLiterals), whose request prepare then conceals and seals anew.

// concealPlan returns pl — a copy, when anything in it is secret — with
// each value its actions' literal params hold that the tool's schema
// marks secret replaced by its commitment object, and those values
// sealed, sorted by commitment. pl is valid (checkPlan). A computed
// parameter that may hold a secret must not quote a literal: a value
// built in the expression would stand in the plan in clear.
func (p *Plane) concealPlan(ctx context.Context, t *stewardv1.Task, pl *stewardv1.Plan) (*stewardv1.Plan, []*stewardv1.SealedSecret, error) {
	out, taskID := pl, t.Contract.GetTaskId()
	var sealed []*stewardv1.SealedSecret
	for i, s := range pl.Steps {
		runs := plandriver.What(s)
		a, at, over := runs.Call, fmt.Sprintf("plan.steps[%d].%s", i, runs.Field), s.GetForeach().GetOver()
		if a == nil {
			continue
		}
		entry, _, err := p.toolFor(ctx, t, a.Tool, a.ToolVersion)
		if err != nil {
			return nil, nil, err
		}
		if !entry.Schema.HasSecrets() {
			continue
		}
		if err := checkSecretExprs(at, a, over, entry.Schema); err != nil {
			return nil, nil, err
		}
		if len(a.Params.GetFields()) == 0 {
			continue
		}
		raw, err := protojson.Marshal(a.Params)
		if err != nil {
			return nil, nil, errs.Field(at+".params", "is not a JSON object: %v", err)
		}
		concealed, own, err := p.conceal(taskID, entry, raw, nil)
		if err != nil {
			return nil, nil, within(at, err)
		}
		if len(own) == 0 {
			continue
		}
		params := &structpb.Struct{}
		if err := protojson.Unmarshal(concealed, params); err != nil {
			return nil, nil, err
		}
		if out == pl {
			out = proto.CloneOf(pl)
		}
		plandriver.What(out.Steps[i]).Call.Params = params
		sealed = carrySealed(sealed, own)
	}
	return out, sealed, nil
}

// checkSecretExprs refuses a computed parameter of a (at) that schema may
// mark secret, in whole or in part, and whose expression quotes a
// literal (plan.QuotesLiteral) — or, in a foreach's body, reads item
// (by its name anywhere in it: a step id may hold it too, and is then
// held to the rule needlessly) while the foreach's over quotes one.
func checkSecretExprs(at string, a *stewardv1.ActionStep, over string, schema *action.Schema) error {
	names := make([]string, 0, len(a.ParamExprs))
	for name := range a.ParamExprs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !schema.SecretWithin(name) {
			continue
		}
		field := fmt.Sprintf("%s.param_exprs[%s]", at, errs.Quote(name))
		quoted, err := plan.QuotesLiteral(a.ParamExprs[name])
		if err != nil {
			return errs.Field(field, "%v", errs.Cut(err.Error(), 1024))
		}
		if quoted {
			return errs.Field(field, "computes a parameter tool %s marks secret, and quotes a literal string, bytes or number, which would stand in the plan in clear: give a secret written in the plan in params, where it is sealed, and let the expression only read results and item", a.Tool)
		}
		if over == "" || !strings.Contains(a.ParamExprs[name], "item") {
			continue
		}
		overAt := strings.TrimSuffix(at, ".body.action") + ".over"
		if quoted, err := plan.QuotesLiteral(over); err != nil || quoted {
			return errs.Field(overAt, "quotes a literal string, bytes or number, and %s computes from item a parameter tool %s marks secret: the value would stand in the plan in clear; list secrets from results, or give them in params, where they are sealed", field, a.Tool)
		}
	}
	return nil
}

// clearPlanHash returns the hash the plan s records would have with its
// sealed values opened: what a retry of its submission, which sends them
// in clear, hashes to.
func (p *Plane) clearPlanHash(taskID string, s *stewardv1.PlanSubmitted) (string, error) {
	if len(s.SealedSecrets) == 0 {
		return s.PlanHash, nil
	}
	pl := proto.CloneOf(s.Plan)
	for _, step := range pl.Steps {
		a := plandriver.What(step).Call
		if len(a.GetParams().GetFields()) == 0 {
			continue
		}
		opened, err := p.openParams(taskID, a.Params, s.SealedSecrets)
		if err != nil {
			return "", err
		}
		if a.Params, err = structpb.NewStruct(opened); err != nil {
			return "", err
		}
	}
	return plan.Hash(pl)
}

// openParams returns literal params with the values sealed among sealed
// opened again.
func (p *Plane) openParams(taskID string, params *structpb.Struct, sealed []*stewardv1.SealedSecret) (map[string]any, error) {
	raw, err := protojson.Marshal(params)
	if err != nil {
		return nil, err
	}
	if raw, err = p.reveal(taskID, raw, sealed); err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}
