package plandriver

import stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"

// openLiterals puts into params, an action's parameters as the plan
// evaluates them, the clear values of a's literal params that the plan
// version in force holds sealed. Only the version's own sealed values are
// opened, and only in its literals: each was concealed from a place its
// tool marks secret, by a submitter who sent it in clear.
func (r *planPass) openLiterals(a *stewardv1.ActionStep, params map[string]any) (map[string]any, error) {
	sealed := r.t.Plan.GetSealedSecrets()
	if len(sealed) == 0 || len(a.GetParams().GetFields()) == 0 {
		return params, nil
	}
	opened, err := r.d.host.OpenParams(r.taskID(), a.Params, sealed)
	if err != nil {
		return nil, err
	}
	if params == nil {
		params = map[string]any{}
	}
	for k, v := range opened {
		params[k] = v
	}
	return params, nil
}
