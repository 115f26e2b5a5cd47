package plan

import (
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// checkForeach checks a bounded foreach: its list expression, its bound,
// and its body, whose expressions also see item.
func checkForeach(field string, f *stewardv1.ForeachStep, l Limits, env Env, sc scope) error {
	if f == nil {
		return errs.Field(field, "is required")
	}
	if f.Over == "" {
		return errs.Field(field+".over", "is required: a CEL expression giving the list")
	}
	if err := checkExpr(field+".over", f.Over, sc, wantList, l); err != nil {
		return err
	}
	switch {
	case f.MaxItems == 0:
		return errs.Field(field+".max_items", "is required: the most items the step may run")
	case int64(f.MaxItems) > int64(l.MaxForeachItems):
		return errs.Field(field+".max_items", "is %d; the limit is %d", f.MaxItems, l.MaxForeachItems)
	}
	body := sc
	body.item = true
	switch k := f.GetBody().GetKind().(type) {
	case *stewardv1.StepTemplate_Action:
		return checkAction(field+".body.action", k.Action, l, env, body)
	case *stewardv1.StepTemplate_SubTask:
		return checkSubTask(field+".body.sub_task", k.SubTask, env)
	}
	return errs.Field(field+".body", "is required: an action or a sub_task")
}
