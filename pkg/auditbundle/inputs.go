package auditbundle

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// recordedInput is what an input document (services/governance's
// policyInput and planInput) says of what it was about.
type recordedInput struct {
	Task struct {
		TaskID string `json:"task_id"`
	} `json:"task"`
	Action *struct {
		ActionID    string          `json:"action_id"`
		Tool        string          `json:"tool"`
		ToolVersion string          `json:"tool_version"`
		Target      string          `json:"target"`
		Params      json.RawMessage `json:"params"`
	} `json:"action"`
	PlanMeta *struct {
		Version json.Number `json:"version"`
		Hash    string      `json:"hash"`
	} `json:"plan_meta"`
}

// inputFault says how the input of s is not about what s decided, or "":
// an action's input names the task, and the action's id, tool, version
// and target, and its parameters re-make the request whose hash the
// action records; a plan's names the task and the plan version and hash
// evaluated. A snapshot's signature covers its input's hash, not this.
func inputFault(t *bundleTask, s snapshotAt, input []byte) string {
	var in recordedInput
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return fmt.Sprintf("not an input document: %v", err)
	}
	if in.Task.TaskID != t.id {
		return fmt.Sprintf("it is about task %q", in.Task.TaskID)
	}
	if s.plan != nil {
		if m := in.PlanMeta; m == nil || m.Hash != s.plan.PlanHash || m.Version.String() != fmt.Sprint(s.plan.Version) {
			return fmt.Sprintf("it is not about version %d of the plan, hash %s", s.plan.Version, s.plan.PlanHash)
		}
		return ""
	}
	a := task.FindAction(t.task, s.actionID)
	in.Action = orEmpty(in.Action)
	switch got := in.Action; {
	case a == nil:
		return fmt.Sprintf("the task has no action %s", s.actionID)
	case got.ActionID != a.ActionId || got.Tool != a.Tool || got.ToolVersion != a.ToolVersion || got.Target != a.Target:
		return fmt.Sprintf("it is about action %q, %s@%s on %q; the action is %s, %s@%s on %q", got.ActionID, got.Tool, got.ToolVersion, got.Target, a.ActionId, a.Tool, a.ToolVersion, a.Target)
	}
	params := in.Action.Params
	if string(params) == "null" {
		params = nil
	}
	canonical, err := action.Canonical(action.Request{TaskID: t.id, Tool: a.Tool, ToolVersion: a.ToolVersion, Target: a.Target, Params: params})
	if err != nil {
		return fmt.Sprintf("its parameters: %v", err)
	}
	if got := action.RequestHash(canonical); got != a.RequestHash {
		return fmt.Sprintf("its parameters make a request hashing to %s, not the action's %s", got, a.RequestHash)
	}
	return ""
}

// orEmpty is p, or a zero value when nil.
func orEmpty[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// planApproval is the approval whose decision s, a plan's evaluation
// after it, was made on (PlanEvaluated.approval_id), as it was requested;
// nil for any other snapshot.
func planApproval(t *bundleTask, s snapshotAt) *stewardv1.Approval {
	if s.plan.GetApprovalId() == "" {
		return nil
	}
	for _, rec := range t.recs {
		if ap := rec.Event.GetApprovalRequested().GetApproval(); ap.GetApprovalId() == s.plan.ApprovalId && ap.GetPlanHash() == s.plan.PlanHash {
			return ap
		}
	}
	return nil
}
