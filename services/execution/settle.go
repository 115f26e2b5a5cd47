package execution

import (
	"context"
	"slices"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution/adapter"
)

// MaxSettleReason bounds the reason a person gives for a settlement.
const MaxSettleReason = 4096

// Settle records a person's settlement of an unknown outcome, or of an
// action an approver said a person executes: who, why, and what shows it.
// Only such an action can be settled, and only once per attempt: a second
// settlement, or one that loses the race to another, is answered with the
// first's action only if it asks exactly what was recorded
// (sameSettlement), and refused otherwise. With tokens, an unknown outcome
// is settled by an operator; a person's execution only ever by that
// person (mayFinish).
func (sm *settlement) Settle(ctx context.Context, who rpc.Identity, req *stewardv1.SettleActionRequest) (*stewardv1.Action, error) {
	if err := checkEvidence(req.Evidence); err != nil {
		return nil, err
	}
	switch {
	case req.TaskId == "":
		return nil, errs.Field("task_id", "is required")
	case !eventlog.ValidTaskID(req.TaskId):
		return nil, errs.Field("task_id", "%s is not a task id: "+eventlog.TaskIDRule, errs.Quote(req.TaskId))
	case req.ActionId == "":
		return nil, errs.Field("action_id", "is required")
	case req.Reason == "":
		return nil, errs.Field("reason", "is required: say how you know")
	case len(req.Reason) > MaxSettleReason:
		return nil, &errs.Error{Code: errs.TooLarge, Field: "reason", Message: "is longer than 4096 bytes"}
	case req.Result != nil && req.State != stewardv1.SettleState_SETTLE_STATE_SUCCEEDED:
		return nil, errs.Field("result", "is only for a succeeded settlement")
	}
	switch req.State {
	case stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, stewardv1.SettleState_SETTLE_STATE_FAILED, stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED:
	default:
		return nil, errs.Field("state", "must be SETTLE_STATE_SUCCEEDED, SETTLE_STATE_FAILED or SETTLE_STATE_NOT_ACCEPTED")
	}
	t, _, err := sm.tasks.Load(ctx, req.TaskId)
	if err != nil {
		return nil, err
	}
	a := task.FindAction(t, req.ActionId)
	if err := mayFinish(a, who, req); err != nil {
		return nil, err // first: what the task holds is not told to whom may not settle
	}
	if a == nil {
		return nil, errs.New(errs.NotFound, "task %s has no action %s", req.TaskId, req.ActionId)
	}
	return sm.settleLoaded(ctx, who.Principal, req, a)
}

// settleLoaded is Settle of a, the action as it was loaded — which may
// be stale by the time the settlement is appended.
func (sm *settlement) settleLoaded(ctx context.Context, principal string, req *stewardv1.SettleActionRequest, a *stewardv1.Action) (*stewardv1.Action, error) {
	s := &stewardv1.ActionSettled{ActionId: a.ActionId, State: req.State, Reason: req.Reason, SettledBy: principal, Evidence: req.Evidence}
	won, err := false, error(nil)
	if settleable(a.Status) {
		if won, err = sm.settleFirst(ctx, req, a, s); err != nil {
			return nil, err
		}
	}
	if !won {
		// A repeat, or a settlement that lost the race to another: the
		// answer is ok only if what was recorded is what this asks.
		if err := sm.sameSettlement(ctx, req, a, s); err != nil {
			return nil, err
		}
	}
	t, _, err := sm.tasks.Load(ctx, req.TaskId)
	if err != nil {
		return nil, err
	}
	return task.FindAction(t, req.ActionId), nil
}

// settleFirst records s, the settlement of a, with its result stored
// first, if a is still unknown when it is appended: won says whether it
// was (false: another settlement came first).
func (sm *settlement) settleFirst(ctx context.Context, req *stewardv1.SettleActionRequest, a *stewardv1.Action, s *stewardv1.ActionSettled) (won bool, err error) {
	if req.State == stewardv1.SettleState_SETTLE_STATE_SUCCEEDED {
		body, err := settledResult(req)
		if err != nil {
			return false, err
		}
		if s.ResultRef, s.ResultHash, err = sm.cfg.Results.Put(ctx, req.TaskId, body); err != nil {
			return false, err
		}
	}
	err = sm.recordIf(ctx, req.TaskId, settlementID(a), cause{}, s, func(t *stewardv1.Task) bool {
		// The last check, on the task as it is when appended, decides:
		// two settlements of one attempt share the event id, and the
		// second would otherwise pass for the first. The attempt too: a
		// settlement of attempt 1 read before another settled it and the
		// action went out again has attempt 1's event id, already on the
		// log, so nothing would be appended, and attempt 2's unknown
		// outcome would pass for this one's to settle.
		cur := task.FindAction(t, a.ActionId)
		won = cur.GetStatus() == a.Status && cur.GetAttempt() == a.Attempt
		return won
	})
	return won && err == nil, err
}

// settledResult is the body a succeeded settlement records: the request's
// result as JSON, null when it gives none.
func settledResult(req *stewardv1.SettleActionRequest) ([]byte, error) {
	if req.Result == nil {
		return []byte("null"), nil
	}
	body, err := protojson.Marshal(req.Result)
	if err != nil {
		return nil, errs.Field("result", "%v", err)
	}
	if len(body) > adapter.MaxResultBytes {
		return nil, &errs.Error{Code: errs.TooLarge, Field: "result", Message: "is larger than a tool result may be"}
	}
	return body, nil
}

// sameSettlement says whether want, the settlement req asks of a, is the
// one recorded last for a: nil if it is (a retry finds its own
// settlement); AlreadyExists, naming what was recorded, if the same
// person settled it the same way with another reason or result, as a
// reused request id is answered; FailedPrecondition if someone else
// settled it, or it was settled otherwise, or it is not settled and not
// unknown.
func (sm *settlement) sameSettlement(ctx context.Context, req *stewardv1.SettleActionRequest, a *stewardv1.Action, want *stewardv1.ActionSettled) error {
	got, err := sm.lastSettlement(ctx, req.TaskId, a.ActionId)
	switch {
	case err != nil:
		return err
	case got == nil:
		return sm.notSettleable(ctx, req.TaskId, a.ActionId)
	case got.SettledBy != want.SettledBy || got.State != want.State:
		return errs.New(errs.FailedPrecondition, "action %s was already settled by %s as %s: %s", a.ActionId, got.SettledBy, settleWord(got.State), errs.Quote(got.Reason))
	case got.Reason != want.Reason || !slices.Equal(got.Evidence, want.Evidence):
		return errs.New(errs.AlreadyExists, "action %s was already settled by %s as %s with another reason: %s; a settlement is recorded once", a.ActionId, got.SettledBy, settleWord(got.State), errs.Quote(got.Reason))
	}
	if want.State != stewardv1.SettleState_SETTLE_STATE_SUCCEEDED {
		return nil
	}
	same, err := sm.sameResult(ctx, got, req.Result)
	if err != nil || same {
		return err
	}
	return errs.New(errs.AlreadyExists, "action %s was already settled by %s as %s with another result (%s); a settlement is recorded once", a.ActionId, got.SettledBy, settleWord(got.State), got.ResultHash)
}

// notSettleable is the refusal of a settlement of an action that has
// none: its status as it is now, not as the caller loaded it, which may
// have changed since.
func (sm *settlement) notSettleable(ctx context.Context, taskID, actionID string) error {
	t, _, err := sm.tasks.Load(ctx, taskID)
	if err != nil {
		return err
	}
	st := task.FindAction(t, actionID).GetStatus()
	if st == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
		return errs.New(errs.FailedPrecondition, "action %s became unknown while this settlement was asked; ask again to settle it", actionID)
	}
	return errs.New(errs.FailedPrecondition, "action %s is %s; only an unknown outcome, or a person's execution, is settled", actionID, task.ActionStatusName(st))
}

// lastSettlement is the last ActionSettled of action actionID on the
// task's log, or nil. A settlement is a person's answer to a rare
// question: reading the task's log for it costs what a Load does.
func (sm *settlement) lastSettlement(ctx context.Context, taskID, actionID string) (*stewardv1.ActionSettled, error) {
	recs, err := sm.log.Read(ctx, taskID)
	if err != nil {
		return nil, err
	}
	var last *stewardv1.ActionSettled
	for _, r := range recs {
		if s := r.Event.GetActionSettled(); s.GetActionId() == actionID {
			last = s
		}
	}
	return last, nil
}

// sameResult says whether settlement s recorded result (nil: null), by
// value: JSON's spacing and key order do not make another result.
func (sm *settlement) sameResult(ctx context.Context, s *stewardv1.ActionSettled, result *structpb.Value) (bool, error) {
	data, err := sm.cfg.Results.Get(ctx, s.ResultRef, s.ResultHash)
	if err != nil {
		return false, err
	}
	var got structpb.Value
	if err := protojson.Unmarshal(data, &got); err != nil {
		return false, nil // not a value a settlement records: not this one
	}
	if result == nil {
		result = structpb.NewNullValue()
	}
	return proto.Equal(&got, result), nil
}

// settleWord names a settlement's state as a person would.
func settleWord(s stewardv1.SettleState) string {
	switch s {
	case stewardv1.SettleState_SETTLE_STATE_SUCCEEDED:
		return "succeeded"
	case stewardv1.SettleState_SETTLE_STATE_FAILED:
		return "failed"
	}
	return "not accepted"
}

type actionService struct {
	stewardv1connect.UnimplementedActionServiceHandler
	plane *Plane
}

func (s *actionService) SettleAction(ctx context.Context, req *connect.Request[stewardv1.SettleActionRequest]) (*connect.Response[stewardv1.SettleActionResponse], error) {
	// Who may settle depends on the action (mayFinish): the role table
	// (pkg/access) lets every known caller through to it.
	a, err := s.plane.settlement.Settle(ctx, rpc.Caller(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.SettleActionResponse{Action: a}), nil
}
