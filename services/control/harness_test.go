package control_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

// undoSchema is what the test's compensating tool takes: exactly what the
// compensation driver promises to pass.
const undoSchema = `{"type":"object","required":["action_id","op_key","target","params","result"],
 "properties":{"action_id":{"type":"string"},"op_key":{"type":"string"},"target":{"type":"string"},"params":{"type":"object"},"result":{}},
 "additionalProperties":false}`

// harness is the control plane under test over the kit's environment
// (stewardtest.Env), which holds the log and the stores as the binary opens
// them. The test plays governance and execution by appending their events
// itself (Env.Append), and signer stands in for governance where a task
// needs a credential.
type harness struct {
	*stewardtest.Env
	ctl    *control.Plane
	signer *credential.Signer
	// sealer seals secret parameters (Config.Secrets), under sealerKey.
	sealer    *secret.Sealer
	sealerKey []byte
	// clock is the plane's, moved on by the tests that need time to pass.
	clock stewardtest.Clock
}

// newHarness registers the harness's tools and starts a control plane that takes
// actions.
func newHarness(t *testing.T, opts ...control.Option) *harness {
	t.Helper()
	r := idleHarness(t, opts...)
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
	r.start(t)
	return r
}

// idleHarness is a control plane over a fresh environment whose reactions do
// not run: only what its commands append is on the log.
func idleHarness(t *testing.T, opts ...control.Option) *harness {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := secret.New(key.Seed())
	if err != nil {
		t.Fatal(err)
	}
	r := &harness{Env: stewardtest.NewEnv(t), signer: credential.NewSigner(key), sealer: sealer, sealerKey: key.Seed()}
	r.ctl = control.New(r.Log, r.Logger, r.config(), opts...)
	t.Cleanup(func() { r.ctl.Stop() }) // its quotas' reader, if a command started it
	return r
}

// config is the plane's configuration over the harness's stores, as the
// binary wires it.
func (r *harness) config() control.Config {
	return control.Config{Tasks: r.Tasks, Tools: r.Tools, Requests: r.Requests, Results: r.Results,
		Secrets: r.sealer, Timers: r.Timers, Now: r.clock.Now}
}

// start runs the plane's reactions until the test ends.
func (r *harness) start(t *testing.T) {
	t.Helper()
	if err := r.ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.ctl.Stop)
}

// redeliver makes the control plane see every event again: it stops the
// plane, drops its durable consumer and starts a fresh plane, which reads
// the stream from the start. It returns once the new plane has handled
// everything on the log now.
func (r *harness) redeliver(t *testing.T) {
	t.Helper()
	r.ctl.Stop()
	if err := r.JS.DeleteConsumer(context.Background(), r.Log.Config().Stream, control.PlaneName); err != nil {
		t.Fatal(err)
	}
	r.ctl = control.New(r.Log, r.Logger, r.config())
	r.start(t)
	r.settle()
}

// settle waits until the control plane has handled every event on the log
// now: a reaction acknowledges after it has appended what it appends, so
// then the plane's answer to every event so far is on the log.
func (r *harness) settle() { r.Settle(control.PlaneName) }

// task is the task folded from the log now.
func (r *harness) task(t *testing.T, taskID string) *stewardv1.Task {
	t.Helper()
	tk, _, err := r.Tasks.Load(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// last is the sequence of the last event on any task.
func (r *harness) last(t *testing.T) uint64 {
	t.Helper()
	seq, err := r.Log.LastTaskSequence(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// running waits until the task runs.
func (r *harness) running(taskID string) *stewardv1.Task {
	return r.WaitTask(taskID, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING })
}

func (r *harness) register(t *testing.T, c *stewardv1.ToolContract) {
	t.Helper()
	r.registerFor(t, "", c)
}

// registerFor records c as tenant's tool, "" for a global one.
func (r *harness) registerFor(t *testing.T, tenant string, c *stewardv1.ToolContract) {
	t.Helper()
	ev, err := event.New(event.Meta{ID: event.ID("tool", c.Name, c.Version, tenant)}, &stewardv1.ToolRegistered{Contract: c, Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	// Later versions of a tool follow the earlier ones on its subject.
	head := eventlog.Head{}
	recs, err := r.Log.ReadTool(context.Background(), c.Name)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(recs); n > 0 {
		head = eventlog.Head{Sequence: recs[n-1].Sequence, Hash: recs[n-1].Event.Hash}
	}
	if _, err := r.Log.Append(context.Background(), head, ev); err != nil {
		t.Fatal(err)
	}
}

// runningTask creates a task allowing the harness's tools, with recovery mode,
// and waits until the control plane has started it.
func (r *harness) runningTask(t *testing.T, requestID string, mode stewardv1.RecoveryMode, limits *stewardv1.TaskLimits) string {
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
	r.running(id)
	return id
}

func (r *harness) propose(t *testing.T, taskID, proposalID, tool, target string, params map[string]any) *stewardv1.Action {
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
func (r *harness) run(t *testing.T, taskID, actionID string, o *stewardv1.Outcome, result []byte, finished time.Time) {
	t.Helper()
	r.dispatch(t, taskID, actionID)
	r.finish(t, taskID, actionID, o, result, finished)
}

// dispatch takes a proposed action up to its dispatch.
func (r *harness) dispatch(t *testing.T, taskID, actionID string) {
	t.Helper()
	a := task.FindAction(r.task(t, taskID), actionID)
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
		r.Append(taskID, p)
	}
}

// finish records a dispatched action's outcome, its result inline or
// stored as the execution plane records it.
func (r *harness) finish(t *testing.T, taskID, actionID string, o *stewardv1.Outcome, result []byte, finished time.Time) {
	t.Helper()
	if result != nil {
		var err error
		if o.Result, o.ResultRef, o.ResultHash, err = r.Results.Keep(context.Background(), taskID, result); err != nil {
			t.Fatal(err)
		}
	}
	o.FinishedAt = timestamppb.New(finished)
	r.Append(taskID, &stewardv1.ActionOutcomeRecorded{ActionId: actionID, Outcome: o})
}

func succeeded() *stewardv1.Outcome {
	return &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1}
}

func failed(class stewardv1.FailureClass, reason string) *stewardv1.Outcome {
	return &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: class, Reason: reason, Attempt: 1}
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
