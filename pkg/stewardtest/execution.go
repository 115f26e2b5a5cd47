package stewardtest

import (
	"context"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// ProposedAction returns action proposalID of task taskID as an agent
// would propose it: an idempotent write, a call of version 1 of tool on
// target with no params, its canonical request stored in e.Requests and
// its identities (action id, hashes, op_key) derived as control derives
// them. Record it with an ActionProposed.
func (e *Env) ProposedAction(taskID, proposalID, tool, target string) *stewardv1.Action {
	e.tb.Helper()
	canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: tool, ToolVersion: "1", Target: target, Params: []byte(`{}`)})
	if err != nil {
		e.tb.Fatal(err)
	}
	ref, reqHash, err := e.Requests.Put(context.Background(), taskID, canonical)
	if err != nil {
		e.tb.Fatal(err)
	}
	actionID := action.ID(taskID, proposalID)
	return &stewardv1.Action{
		ActionId: actionID, ProposalId: proposalID, Tool: tool, ToolVersion: "1", Target: target,
		EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		RequestRef:  ref, RequestHash: reqHash, ActionHash: action.Hash(actionID, reqHash), OpKey: action.OpKey(taskID, actionID),
	}
}
