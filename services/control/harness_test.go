package control_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/control"
)

// undoSchema is what the test's compensating tool takes: exactly what the
// compensation driver promises to pass.
const undoSchema = `{"type":"object","required":["action_id","op_key","target","params","result"],
 "properties":{"action_id":{"type":"string"},"op_key":{"type":"string"},"target":{"type":"string"},"params":{"type":"object"},"result":{}},
 "additionalProperties":false}`

// rig is a control plane that takes actions, running against a real
// embedded JetStream, with the stores and tools it needs. The test plays
// governance and execution by appending their events itself.
type rig struct {
	log      *eventlog.Log
	bus      *stewardtest.Bus
	tools    *toolreg.Registry
	requests *action.Store
	results  *action.Store
	ctl      *control.Plane
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := context.Background()
	log, bus := stewardtest.OpenLog(t)
	r := &rig{log: log, bus: bus, tools: toolreg.New(slog.New(slog.DiscardHandler))}
	rctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go r.tools.Run(rctx, log)
	var err error
	if r.requests, err = action.OpenStore(ctx, bus.JS, action.RequestBucket, 1); err != nil {
		t.Fatal(err)
	}
	if r.results, err = action.OpenStore(ctx, bus.JS, action.ResultBucket, 1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*stewardv1.ToolContract{
		{Name: "write", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, CompensatingTool: "undo",
			ParametersSchema: `{"type":"object","required":["text"]}`},
		{Name: "undo", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, ParametersSchema: undoSchema},
		{Name: "search", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL},
		{Name: "net", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, RetryPolicy: &stewardv1.RetryPolicy{
			MaxAttempts: 5, InitialBackoff: dur(time.Second), MaxBackoff: dur(30 * time.Second), MaxElapsed: dur(5 * time.Minute)}},
	} {
		r.register(t, c)
	}
	r.ctl = r.plane(t)
	return r
}

// plane starts a control plane over the rig's log and stores.
func (r *rig) plane(t *testing.T) *control.Plane {
	t.Helper()
	p := control.New(r.log, slog.New(slog.DiscardHandler), control.WithActions(r.tools, r.requests), control.WithResults(r.results))
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// redeliver makes the control plane see every event again: it stops the
// plane, drops its durable consumer and starts a fresh plane, which reads
// the stream from the start. It returns once the new plane has handled
// everything on the log now.
func (r *rig) redeliver(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	r.ctl.Stop()
	if err := r.bus.JS.DeleteConsumer(ctx, r.log.Config().Stream, control.PlaneName); err != nil {
		t.Fatal(err)
	}
	r.ctl = r.plane(t)
	r.settle(t)
}

// settle waits until the control plane has handled (acknowledged) every
// event on the stream now. A reaction acknowledges after it has appended
// what it appends, so after settle the plane's answer to every event so
// far is on the log.
func (r *rig) settle(t *testing.T) {
	t.Helper()
	settle(t, r.bus, r.log)
}

// settle waits until the control plane reading log on bus has handled
// every event on the stream now (see rig.settle).
func settle(t *testing.T, bus *stewardtest.Bus, log *eventlog.Log) {
	t.Helper()
	bus.Settle(t, log.Config().Stream, control.PlaneName)
}

func (r *rig) register(t *testing.T, c *stewardv1.ToolContract) {
	t.Helper()
	ev, err := event.New(event.Meta{ID: event.ID("tool", c.Name, c.Version)}, &stewardv1.ToolRegistered{Contract: c})
	if err != nil {
		t.Fatal(err)
	}
	// Later versions of a tool follow the earlier ones on its subject.
	head := eventlog.Head{}
	recs, err := r.log.ReadTool(context.Background(), c.Name)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(recs); n > 0 {
		head = eventlog.Head{Sequence: recs[n-1].Sequence, Hash: recs[n-1].Event.Hash}
	}
	if _, err := r.log.Append(context.Background(), head, ev); err != nil {
		t.Fatal(err)
	}
}

// runningTask creates a task allowing the rig's tools, with recovery mode,
// and waits until the control plane has started it.
func (r *rig) runningTask(t *testing.T, requestID string, mode stewardv1.RecoveryMode, limits *stewardv1.TaskLimits) string {
	t.Helper()
	req := validRequest(requestID)
	req.Contract.AllowedTools = []string{"write", "undo", "search", "net"}
	req.Contract.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: mode}
	req.Contract.Limits = limits
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	waitTask(t, r.log, id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING })
	return id
}

func (r *rig) propose(t *testing.T, taskID, proposalID, tool, target string, params map[string]any) *stewardv1.Action {
	t.Helper()
	ps, err := structpb.NewStruct(params)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: proposalID, Tool: tool, Target: target, Params: ps})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// run takes a proposed action through governance and execution as their
// events record it, up to its outcome, finished at the given time. A
// succeeded outcome with a result stores it in the results store.
func (r *rig) run(t *testing.T, taskID, actionID string, o *stewardv1.Outcome, result []byte, finished time.Time) {
	t.Helper()
	r.dispatch(t, taskID, actionID)
	r.finish(t, taskID, actionID, o, result, finished)
}

// dispatch takes a proposed action up to its dispatch.
func (r *rig) dispatch(t *testing.T, taskID, actionID string) {
	t.Helper()
	tk, _, err := taskstore.Load(context.Background(), r.log, taskID)
	if err != nil {
		t.Fatal(err)
	}
	a := task.FindAction(tk, actionID)
	if a == nil {
		t.Fatalf("task %s has no action %s", taskID, actionID)
	}
	permit := "permit-" + actionID
	for _, p := range []event.Payload{
		&stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "snap-" + actionID, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: permit, ActionId: actionID, ActionHash: a.ActionHash, RequestHash: a.RequestHash}},
		&stewardv1.ActionClaimed{ActionId: actionID, PermitId: permit, Worker: "w"},
		&stewardv1.ActionDispatched{ActionId: actionID, Attempt: 1, Worker: "w"},
	} {
		r.append(t, taskID, p)
	}
}

// finish records a dispatched action's outcome.
func (r *rig) finish(t *testing.T, taskID, actionID string, o *stewardv1.Outcome, result []byte, finished time.Time) {
	t.Helper()
	if result != nil {
		var err error
		if o.ResultRef, o.ResultHash, err = r.results.Put(context.Background(), result); err != nil {
			t.Fatal(err)
		}
	}
	o.FinishedAt = timestamppb.New(finished)
	r.append(t, taskID, &stewardv1.ActionOutcomeRecorded{ActionId: actionID, Outcome: o})
}

// append records one event on a task as another plane would.
func (r *rig) append(t *testing.T, taskID string, p event.Payload) {
	t.Helper()
	_, err := taskstore.Update(context.Background(), r.log, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		ev, err := event.New(event.Meta{TaskID: taskID, Actor: &stewardv1.Actor{Principal: "test"}}, p)
		if err == nil {
			ev.Actor.Plane = event.Owner(ev.Type) // as the plane that owns it
		}
		return ev, err
	})
	if err != nil {
		t.Fatalf("append %T: %v", p, err)
	}
}

func succeeded() *stewardv1.Outcome {
	return &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1}
}

func failed(class stewardv1.FailureClass, reason string) *stewardv1.Outcome {
	return &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: class, Reason: reason, Attempt: 1}
}

// waitTask waits until the task satisfies ok and returns it.
func waitTask(t *testing.T, log *eventlog.Log, taskID string, ok func(*stewardv1.Task) bool) *stewardv1.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk, _, err := taskstore.Load(context.Background(), log, taskID)
		if err != nil {
			t.Fatal(err)
		}
		if ok(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never got there; it is %s (%s) with %d actions", taskID, tk.Status, tk.StatusReason, len(tk.Actions))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// compensationOf returns the action that compensates id, or nil.
func compensationOf(tk *stewardv1.Task, id string) *stewardv1.Action {
	for _, a := range tk.Actions {
		if a.Compensates == id {
			return a
		}
	}
	return nil
}

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }
